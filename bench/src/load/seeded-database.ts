/**
 * The databases a PostgreSQL run measures on: seeded afresh, or reused from an earlier run that
 * seeded them alike, then read into the page cache. `pnpm bench` makes one; `--curve` two, of
 * different sizes.
 */
import { existsSync } from "node:fs";
import { hash } from "@node-rs/argon2";
import pg from "pg";
import type { Options } from "../options.js";
import { freePorts, runNode, startServer } from "../servers/server-process.js";
import type { TokenSettings } from "../servers/tokens.js";
import {
  createFallbackSchema,
  recreateDatabase,
  SEED_PASSWORD,
  seed,
  warmPageCache,
  withDatabase,
} from "./database.js";
import {
  HASH_SOURCE_EMAIL,
  log,
  logFile,
  registerHashSource,
  SERVICE_MAIN,
  serverEnv,
  serviceArgs,
  since,
} from "./harness.js";

/** A seeded database of the run. */
export interface SeededDatabase {
  readonly name: string;
  /** Its URL, without an application_name. */
  readonly url: string;
  readonly posts: number;
  /** Connected to it; the run ends it. */
  readonly client: pg.Client;
}

/**
 * Database `name`, beside the one `options.databaseUrl` names, with the service's schema and
 * `posts` posts over `options.users` users, and a client connected to it. It is dropped and
 * seeded afresh unless `options.reuseDatabase` finds it seeded with the same counts, when it is
 * only migrated. The schema is the service's own migrations (a copy of it for a self-check
 * before the service is built); the seeded users' password hash is the service's own hasher's
 * (argon2's for a self-check). `tokens` are the run's, which the service needs to start.
 */
export async function seededDatabase(
  options: Options,
  name: string,
  posts: number,
  tokens: TokenSettings,
): Promise<SeededDatabase> {
  const serviceBuilt = existsSync(SERVICE_MAIN);
  const url = withDatabase(options.databaseUrl, name);
  const env = serverEnv(tokens, url);
  const started = performance.now();
  // Names what the seed plants, so that --reuse-database never measures an older seed.
  const seedMark = `bench seed (old-end and clustered terms): ${posts} posts / ${options.users} users`;
  const reused = options.reuseDatabase && (await seededAs(url, seedMark));
  if (!reused) await recreateDatabase(options.databaseUrl, name);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // The service's own migrations through its documented command; on a reused database too,
    // since a newer service may have migrations it has not seen yet.
    if (serviceBuilt) await runNode([SERVICE_MAIN, "migrate"], env);
    if (reused) {
      log(`reusing ${name}, seeded earlier with ${posts} posts (--reuse-database)`);
    } else {
      if (!serviceBuilt) await createFallbackSchema(client);
      const passwordHash = options.selfCheck ? await hash(SEED_PASSWORD) : await hashFromService(env, client);
      // A second connection builds the partitions' indexes beside the first: one core each.
      const second = new pg.Client({ connectionString: url });
      await second.connect();
      try {
        await seed(client, { users: options.users, posts }, passwordHash, [client, second]);
      } finally {
        await second.end();
      }
      await client.query(`comment on table posts is '${seedMark}'`);
      log(`migrated and seeded ${name} with ${posts} posts over ${options.users} users in ${since(started)}`);
    }
    return { name, url, posts, client };
  } catch (error) {
    await client.end();
    throw error;
  }
}

/** Reads `database`'s tables and indexes into the page cache (`warmPageCache`), and says so. */
export async function warmDatabase(database: SeededDatabase): Promise<void> {
  const warmed = await warmPageCache(database.client);
  log(
    warmed === undefined
      ? "the server has no pg_prewarm: the tables are measured as cached as they happen to be"
      : `read ${(warmed / 2 ** 30).toFixed(1)} GiB of ${database.name}'s tables and indexes into the page cache`,
  );
}

/** Whether the database at `url` exists and was seeded as `mark` says. */
async function seededAs(url: string, mark: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const { rows } = await client.query<{ mark: string | null }>(
      "select obj_description('posts'::regclass, 'pg_class') as mark",
    );
    return rows[0]?.mark === mark;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The hash the service's own hasher makes of {@link SEED_PASSWORD}: registers one user through
 * a short-lived service process on `env`'s database, takes the hash and deletes the user, which
 * makes way for the seeded ids.
 */
async function hashFromService(env: NodeJS.ProcessEnv, client: pg.Client): Promise<string> {
  const [port] = await freePorts(1);
  const service = await startServer(
    "service",
    serviceArgs(),
    { ...env, PORT: String(port) },
    logFile("service-register"),
  );
  try {
    await registerHashSource(service.url);
  } finally {
    await service.stop();
  }
  const { rows } = await client.query<{ password_hash: string }>(
    "delete from users where email = $1 returning password_hash",
    [HASH_SOURCE_EMAIL],
  );
  const passwordHash = rows[0]?.password_hash;
  if (passwordHash === undefined)
    throw new Error("the user registered through the service is not in the database");
  return passwordHash;
}
