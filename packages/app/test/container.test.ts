import {
  isDatabaseUnavailable,
  PostgresAttemptCounter,
  PostgresPostRepository,
  PostgresUserRepository,
} from "@posts/adapters-postgres";
import type { TestDatabase } from "@posts/adapters-postgres/testing";
import { openTestDatabase } from "@posts/adapters-postgres/testing";
import type { PasswordHasher, PostRepository } from "@posts/domain";
import { systemClock } from "@posts/domain";
import { aUser, FakePasswordHasher, ManualClock } from "@posts/domain/testing";
import type { DependencyContainer } from "tsyringe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppConfig } from "../src/config.js";
import { loadConfig } from "../src/config.js";
import { createContainer, type HttpApp, TOKENS } from "../src/container.js";
import { createLogger } from "../src/create-logger.js";

const SECRET = "container-test-secret-0123456789abcdef";
const ENV = {
  JWT_ISSUER: "issuer-under-test",
  JWT_TTL_MS: "60000",
  BODY_LIMIT: "4096",
  APP_TIME_ZONE: "Asia/Seoul",
  TRUST_PROXY: "1",
  CORS_ORIGINS: "https://app.example.com",
  LOGIN_THROTTLE_MAX: "3",
  METRICS: "false",
  IDEMPOTENCY_TTL_MS: "60000",
  HTTP_REQUEST_TIMEOUT_MS: "10000",
  HTTP_CONNECTION_TIMEOUT_MS: "20000",
  HTTP_KEEP_ALIVE_TIMEOUT_MS: "65000",
};

function config(env: Record<string, string>): AppConfig {
  const loaded = loadConfig({ JWT_SECRET: SECRET, ...env });
  if (!loaded.ok) throw new Error(loaded.error.join("\n"));
  return loaded.value;
}

function decodePayload(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8"));
}

/** Registers `email` through `app` and logs in; answers the login's status and token. */
async function signUp(app: HttpApp, email: string): Promise<{ status: number; token: string }> {
  const credentials = { email, password: "a long password" };
  const registered = await app.inject({ method: "POST", url: "/api/v1/user", payload: credentials });
  expect(registered.statusCode).toBe(201);
  return logIn(app, email);
}

async function logIn(app: HttpApp, email: string): Promise<{ status: number; token: string }> {
  const credentials = { email, password: "a long password" };
  const loggedIn = await app.inject({ method: "POST", url: "/api/v1/user/login", payload: credentials });
  return { status: loggedIn.statusCode, token: (loggedIn.json() as { token?: string }).token ?? "" };
}

/** Runs `check` on the HTTP apps of `child` and `parent`, closing both after. */
async function withApps(
  child: DependencyContainer,
  parent: DependencyContainer,
  check: (app: HttpApp, parentApp: HttpApp) => Promise<void>,
): Promise<void> {
  const [app, parentApp] = await Promise.all([child.resolve(TOKENS.httpApp), parent.resolve(TOKENS.httpApp)]);
  try {
    await check(app, parentApp);
  } finally {
    await Promise.all([app.close(), parentApp.close()]);
  }
}

describe("createContainer", () => {
  let database: TestDatabase;
  const logger = createLogger("silent");
  const hasher = new FakePasswordHasher();

  /** The composition root over the test database, as `openResources` leaves it in production. */
  function containerFor(env: Record<string, string> = ENV): DependencyContainer {
    const container = createContainer(config(env), logger);
    container.register(TOKENS.jwtSecret, { useValue: SECRET });
    container.register(TOKENS.database, { useValue: database });
    container.register(TOKENS.passwordHasher, { useValue: hasher });
    return container;
  }

  beforeAll(async () => {
    database = await openTestDatabase("pglite");
  });
  afterAll(async () => {
    await database?.close();
  });

  it("wires the PostgreSQL repositories, the system clock, the registered hasher and a JWT issuer into Dependencies", () => {
    const deps = containerFor().resolve(TOKENS.dependencies);

    expect(deps.posts).toBeInstanceOf(PostgresPostRepository);
    expect(deps.users).toBeInstanceOf(PostgresUserRepository);
    expect(deps.clock).toBe(systemClock);
    expect(deps.hasher).toBe(hasher);
    expect(deps.idempotencyTtlMs).toBe(60_000);
  });

  it("builds each instance once", async () => {
    const container = containerFor();

    expect(container.resolve(TOKENS.httpAppOptions)).toBe(container.resolve(TOKENS.httpAppOptions));
    expect(container.resolve(TOKENS.dependencies).posts).toBe(container.resolve(TOKENS.postRepository));
    expect(container.resolve(TOKENS.dependencies).tokens).toBe(container.resolve(TOKENS.tokenIssuer));
    const app = container.resolve(TOKENS.httpApp);
    expect(container.resolve(TOKENS.httpApp)).toBe(app);
    await (await app).close();
  });

  it("gives separate containers separate instances", () => {
    expect(containerFor().resolve(TOKENS.postRepository)).not.toBe(
      containerFor().resolve(TOKENS.postRepository),
    );
  });

  it("fails to resolve the graph before the database is registered", () => {
    const unopened = createContainer(config(ENV), logger);

    expect(() => unopened.resolve(TOKENS.postRepository)).toThrow(/unregistered/i);
  });

  it("issues tokens with the configured issuer and lifetime", async () => {
    const issued = await containerFor()
      .resolve(TOKENS.tokenIssuer)
      .issue({ subject: "7", email: "a@example.com", roles: ["ROLE_USER"] });
    const payload = decodePayload(issued.token);

    expect(issued.expiresInMs).toBe(60_000);
    expect(payload).toMatchObject({ iss: "issuer-under-test", sub: "7", email: "a@example.com" });
    expect(Number(payload.exp) - Number(payload.iat)).toBe(60);
  });

  it("hands the HTTP app the settings, the logger and the database's unavailability test", () => {
    const options = containerFor({ ...ENV, TRUST_PROXY: "10.0.0.0/8, loopback" }).resolve(
      TOKENS.httpAppOptions,
    );

    expect(options).toMatchObject({
      jwt: { secret: SECRET, previousSecrets: [], issuer: "issuer-under-test" },
      bodyLimit: 4096,
      timeZone: "Asia/Seoul",
      trustProxy: "10.0.0.0/8,loopback",
      corsOrigins: ["https://app.example.com"],
      loginThrottle: { max: 3, windowMs: 60_000 },
      metrics: false,
      timeouts: { requestMs: 10_000, connectionMs: 20_000, keepAliveMs: 65_000 },
    });
    expect(containerFor().resolve(TOKENS.httpAppOptions).trustProxy).toBe(1);
    expect(containerFor().resolve(TOKENS.httpAppOptions).eventStreamCaps).toEqual({
      maxStreams: 1000,
      maxStreamsPerAddress: 20,
    });
    expect(options.logger).toBe(logger);
    expect(options.isUnavailable).toBe(isDatabaseUnavailable);
  });

  it("hands the HTTP app the pool's statistics when the database has a pool, and none for PGlite", () => {
    expect(containerFor().resolve(TOKENS.httpAppOptions).poolStats).toBeUndefined();
    const poolStats = () => ({ max: 10, total: 2, idle: 1, waiting: 0 });
    const pooled = containerFor().createChildContainer();
    pooled.register(TOKENS.database, { useValue: { ...database, poolStats } });

    expect(pooled.resolve(TOKENS.httpAppOptions).poolStats).toBe(poolStats);
  });

  it("counts throttled attempts in the database, and sweeps its expired counts", async () => {
    const container = containerFor();
    const counter = container.resolve(TOKENS.attemptCounter);
    expect(counter).toBeInstanceOf(PostgresAttemptCounter);
    expect(container.resolve(TOKENS.httpAppOptions).attemptCounter).toBe(counter);

    const start = new Date("2026-11-22T10:00:00.000Z");
    await counter.increment("container-test:ended", 1000, start);
    await counter.increment("container-test:running", 5000, start);
    const sweeps = container.resolve(TOKENS.expirySweeps);
    expect(sweeps.map((sweep) => sweep.name)).toEqual([
      "attempt counts",
      "idempotency keys",
      "change events",
    ]);
    expect(await sweeps[0]?.deleteExpired(new Date(start.getTime() + 1000))).toBe(1);
    expect([
      ...(await counter.read(["container-test:ended", "container-test:running"], start)).keys(),
    ]).toEqual(["container-test:running"]);
  });

  it("sweeps the idempotency keys whose time is up, and only those", async () => {
    const container = containerFor();
    const posts = container.resolve(TOKENS.postRepository);
    const author = await aUser(container.resolve(TOKENS.userRepository));
    const start = new Date("2026-11-22T10:00:00.000Z");
    for (const [key, ttlMs] of [
      ["container-test-ended", 1000],
      ["container-test-running", 5000],
    ] as const) {
      const created = await posts.createIdempotently(
        { authorId: author.id, title: key, content: "본문", createdAt: start },
        { key, expiresAt: new Date(start.getTime() + ttlMs) },
      );
      expect(created.ok).toBe(true);
    }
    const sweep = container.resolve(TOKENS.expirySweeps).find((each) => each.name === "idempotency keys");

    expect(await sweep?.deleteExpired(new Date(start.getTime() + 1000))).toBe(1);
    expect(await sweep?.deleteExpired(new Date(start.getTime() + 1000))).toBe(0);
    expect(await sweep?.deleteExpired(new Date(start.getTime() + 5000))).toBe(1);
  });

  it("gives the post repository the configured cache and the HTTP app access to it, and neither with POST_CACHE_MAX_BYTES=0", async () => {
    const cached = containerFor({ POST_CACHE_MAX_BYTES: "1000000" });
    const posts = cached.resolve(TOKENS.postRepository) as PostgresPostRepository;
    const { postCache } = cached.resolve(TOKENS.httpAppOptions);
    expect(postCache?.stats()).toEqual(posts.cacheStats());
    const author = await aUser(cached.resolve(TOKENS.userRepository));
    const post = await posts.create({ authorId: author.id, title: "t", content: "c", createdAt: new Date() });
    if (post === undefined) throw new Error("author gone");
    // Admitted at the second reading of the page.
    await posts.listPage({ limit: 1 });
    const [listed] = await posts.listPage({ limit: 1 });
    expect(listed?.id).toBe(post.id);
    expect(listed !== undefined && postCache?.holds(listed)).toBe(true);

    const uncached = containerFor({ POST_CACHE_MAX_BYTES: "0" });
    expect((uncached.resolve(TOKENS.postRepository) as PostgresPostRepository).cacheStats()).toBeUndefined();
    expect(uncached.resolve(TOKENS.httpAppOptions).postCache).toBeUndefined();
  });

  it("hands the HTTP adapter the login throttle's defaults from the settings when nothing overrides them", () => {
    const options = containerFor({}).resolve(TOKENS.httpAppOptions);

    expect(options.loginThrottle).toEqual({ max: 10, windowMs: 60_000 });
  });

  it("serves /metrics on a listener of its own only with METRICS_PORT and METRICS on, the API app then only counting", () => {
    const own = containerFor({ METRICS_PORT: "0" });
    expect(own.resolve(TOKENS.httpAppOptions).metrics).toBe("own-listener");
    expect(own.resolve(TOKENS.metricsListener)?.name).toBe("metrics listener");
    expect(
      containerFor({ METRICS_PORT: "0", METRICS: "false" }).resolve(TOKENS.metricsListener),
    ).toBeUndefined();
    expect(containerFor({}).resolve(TOKENS.metricsListener)).toBeUndefined();
    expect(containerFor({}).resolve(TOKENS.httpAppOptions).metrics).toBe(true);
  });

  it("starts, in order, the change event log, the partitions task, the HTTP server and the expiry sweeper; the event relay only with NATS_URL, before the server", () => {
    const names = (env: Record<string, string>) =>
      containerFor(env)
        .resolve(TOKENS.lifecycle)
        .map((part) => part.name);

    expect(names(ENV)).toEqual([
      "change event log",
      "partitions of posts ahead",
      "HTTP server",
      "expiry sweeper",
    ]);
    expect(names({ ...ENV, NATS_URL: "nats://127.0.0.1:1" })).toEqual([
      "change event log",
      "partitions of posts ahead",
      "event relay",
      "HTTP server",
      "expiry sweeper",
    ]);
  });

  describe("a child container replacing one registration", () => {
    it("a fixed clock: the real HTTP app dates what it creates by it, while the parent keeps the system clock", async () => {
      const parent = containerFor();
      const child = parent.createChildContainer();
      child.register(TOKENS.clock, { useValue: new ManualClock("2026-11-22T10:15:30.123Z") });
      const app = await child.resolve(TOKENS.httpApp);
      try {
        const { token } = await signUp(app, "fixed-clock@example.com");
        const created = await app.inject({
          method: "POST",
          url: "/api/v1/posts",
          headers: { "x-auth-token": token },
          payload: { title: "at a fixed instant", content: "본문" },
        });
        expect(created.statusCode).toBe(201);
        const read = await app.inject({ method: "GET", url: String(created.headers.location) });

        // 10:15:30.123 UTC in Asia/Seoul, the configured zone.
        expect(read.json()).toMatchObject({ createdAt: "2026-11-22T19:15:30.123" });
        expect(parent.resolve(TOKENS.dependencies).clock).toBe(systemClock);
      } finally {
        await app.close();
      }
    });

    it("a failing post repository: the real HTTP app answers 503 with Retry-After, and the parent's reads still work", async () => {
      const parent = containerFor();
      const unreachable = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), {
        code: "ECONNREFUSED",
      });
      const failing = new Proxy({} as PostRepository, {
        get: () => async () => {
          throw unreachable;
        },
      });
      const child = parent.createChildContainer();
      child.register(TOKENS.postRepository, { useValue: failing });
      await withApps(child, parent, async (app, parentApp) => {
        const refused = await app.inject({ method: "GET", url: "/api/v1/posts?size=1" });
        expect(refused.statusCode).toBe(503);
        expect(refused.headers["retry-after"]).toBeDefined();
        expect((await parentApp.inject({ method: "GET", url: "/api/v1/posts?size=1" })).statusCode).toBe(200);
      });
    });

    it("another password hasher: registration and login go through it, and the parent's hasher does not accept its hashes", async () => {
      const parent = containerFor();
      const hashed: string[] = [];
      const other: PasswordHasher = {
        decoyHash: "other$decoy",
        hash: async (password) => {
          hashed.push(password);
          return `other$${password}`;
        },
        verify: async (hash, password) => hash !== "other$decoy" && hash === `other$${password}`,
      };
      const child = parent.createChildContainer();
      child.register(TOKENS.passwordHasher, { useValue: other });
      await withApps(child, parent, async (app, parentApp) => {
        expect((await signUp(app, "other-hasher@example.com")).status).toBe(200);
        expect(hashed).toEqual(["a long password"]);
        const user = await child.resolve(TOKENS.userRepository).findByEmail("other-hasher@example.com");
        expect(user?.passwordHash).toBe("other$a long password");
        expect((await logIn(parentApp, "other-hasher@example.com")).status).toBe(401);
      });
    });
  });

  it("answers 503 with the envelope for a post past the last partition, until the partitions task's next run; /metrics shows the ids left", async () => {
    const container = containerFor({ ...ENV, METRICS: "true" });
    const lines: Record<string, unknown>[] = [];
    container.register(TOKENS.logger, {
      useValue: createLogger("info", { write: (line: string) => void lines.push(JSON.parse(line)) }),
    });
    const task = container.resolve(TOKENS.partitionsAhead);
    const app = await container.resolve(TOKENS.httpApp);
    try {
      const { token } = await signUp(app, "past-the-last-partition@example.com");
      const create = () =>
        app.inject({
          method: "POST",
          url: "/api/v1/posts",
          headers: { "x-auth-token": token },
          payload: { title: "far", content: "past the end" },
        });
      // The sequence moved to the end of the last partition the migration made (p2): the next id
      // is past it.
      const fn = (name: string, ...args: unknown[]) =>
        database.db
          .selectNoFrom((eb) =>
            eb
              .fn<number>(
                name,
                args.map((arg) => eb.val(arg)),
              )
              .as("value"),
          )
          .executeTakeFirstOrThrow()
          .then((row) => Number(row.value));
      const given = await fn("nextval", "posts_id_seq");
      const last = await fn("setval", "posts_id_seq", given + (await fn("posts_partition_ids_left")));
      const refused = await create();
      expect(refused.statusCode).toBe(503);
      expect(refused.headers["retry-after"]).toBeDefined();
      expect(refused.json()).toMatchObject({
        status: 503,
        error: "Service Unavailable",
        path: "/api/v1/posts",
      });

      const scrape = async () =>
        /^posts_partition_ids_left (\S+)$/m.exec(
          (await app.inject({ method: "GET", url: "/metrics" })).body,
        )?.[1];
      // Not read yet: not a number (prom-client writes "Nan", which Prometheus reads as NaN).
      expect(await scrape()).toMatch(/^nan$/i);
      task.start();
      await task.idle();
      const created = await create();
      expect(created.statusCode).toBe(201);
      // The refused post used up an id too.
      expect(created.headers.location).toMatch(new RegExp(`/api/v1/posts/${last + 2}$`));
      expect(Number(await scrape())).toBe(task.idsLeft);
      expect(task.idsLeft).toBeGreaterThan(131072);
      expect(lines.filter((line) => String(line.msg).includes("partitions of posts"))).toEqual([
        expect.objectContaining({
          level: 30,
          msg: "made 3 partitions of posts ahead",
          idsLeft: task.idsLeft,
        }),
      ]);
    } finally {
      await task.close();
      await app.close();
    }
  });

  it("is ready when the database answers: GET /ready through the real app", async () => {
    const app = await containerFor().resolve(TOKENS.httpApp);
    try {
      const response = await app.inject({ method: "GET", url: "/ready" });
      expect(response.statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  // Last: it closes the shared database.
  it("is not ready once the database is gone", async () => {
    const options = containerFor().resolve(TOKENS.httpAppOptions);
    await database.close();

    await expect(options.checkReady?.()).rejects.toThrow();
  });
});
