/**
 * The image {@link acquirePostgresContainer} starts when `POSTS_TEST_POSTGRES_IMAGE` is unset: the
 * official PostgreSQL 15 image, which any machine that reaches Docker Hub pulls once.
 */
export const DEFAULT_POSTGRES_IMAGE = "postgres:15-alpine";

/** One holder's share of the process's PostgreSQL container (see {@link acquirePostgresContainer}). */
export interface PostgresContainerLease {
  /** `postgres://…` of the container's database, as its superuser, on the host's mapped port. */
  readonly url: string;
  /** The image the container runs. */
  readonly image: string;
  /**
   * Gives the share back; the last one given back stops and removes the container. Calling it
   * again does nothing.
   */
  release(): Promise<void>;
}

interface Shared {
  readonly started: Promise<{ url: string; image: string; stop: () => Promise<unknown> }>;
  holders: number;
}

let shared: Shared | undefined;

/**
 * A PostgreSQL server in a container for this process, started with testcontainers on the first
 * call and shared by every later one until the last lease is released, which stops it. A contract
 * suite's `open` acquires it and its `close` releases it:
 *
 * ```ts
 * postRepositoryContract("my adapter", async () => {
 *   const server = await acquirePostgresContainer();
 *   const mine = await openMyRepositories(server.url);
 *   return { ...mine, close: async () => { await mine.close(); await server.release(); } };
 * });
 * ```
 *
 * The image is `POSTS_TEST_POSTGRES_IMAGE`, else {@link DEFAULT_POSTGRES_IMAGE}; it must behave as
 * the official image does (`POSTGRES_USER`, `POSTGRES_PASSWORD`, `POSTGRES_DB`, port 5432,
 * `pg_isready`). testcontainers finds the container runtime and reads its own settings from the
 * environment (`DOCKER_HOST`, `TESTCONTAINERS_RYUK_DISABLED`, `TESTCONTAINERS_HOST_OVERRIDE`).
 * testcontainers and `@testcontainers/postgresql` are optional peer dependencies, loaded only
 * here. Rejects when they are not installed, no runtime answers or the container does not become
 * ready; a later call then tries again.
 */
export async function acquirePostgresContainer(): Promise<PostgresContainerLease> {
  if (shared === undefined) {
    const image = postgresContainerImage();
    const started = import("@testcontainers/postgresql").then(async ({ PostgreSqlContainer }) => {
      const container = await new PostgreSqlContainer(image).start();
      return { url: container.getConnectionUri(), image, stop: () => container.stop() };
    });
    shared = { started, holders: 0 };
  }
  const current = shared;
  current.holders++;
  let url: string;
  let image: string;
  try {
    ({ url, image } = await current.started);
  } catch (error) {
    current.holders--;
    if (shared === current) shared = undefined;
    throw error;
  }
  let released = false;
  return {
    url,
    image,
    release: async () => {
      if (released) return;
      released = true;
      current.holders--;
      if (current.holders === 0 && shared === current) {
        shared = undefined;
        await (await current.started).stop();
      }
    },
  };
}

/** The image {@link acquirePostgresContainer} starts: `POSTS_TEST_POSTGRES_IMAGE`, else the default. */
export function postgresContainerImage(): string {
  const configured = process.env.POSTS_TEST_POSTGRES_IMAGE?.trim();
  return configured === undefined || configured === "" ? DEFAULT_POSTGRES_IMAGE : configured;
}
