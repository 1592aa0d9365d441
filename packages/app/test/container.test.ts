import { buildHttpApp, DEFAULT_LOGIN_THROTTLE } from "@posts/adapters-http";
import {
  isDatabaseUnavailable,
  PostgresAttemptCounter,
  PostgresPostRepository,
  PostgresUserRepository,
} from "@posts/adapters-postgres";
import type { TestDatabase } from "@posts/adapters-postgres/testing";
import { openTestDatabase } from "@posts/adapters-postgres/testing";
import { systemClock } from "@posts/domain";
import { aUser, FakePasswordHasher } from "@posts/domain/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppConfig } from "../src/config.js";
import { loadConfig } from "../src/config.js";
import type { ContainerSeeds } from "../src/container.js";
import { createContainer, TOKENS } from "../src/container.js";
import { createLogger } from "../src/create-logger.js";

const SECRET = "container-test-secret-0123456789abcdef";

function config(env: Record<string, string>): AppConfig {
  const loaded = loadConfig({ JWT_SECRET: SECRET, ...env });
  if (!loaded.ok) throw new Error(loaded.error.join("\n"));
  return loaded.value;
}

function decodePayload(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8"));
}

describe("createContainer", () => {
  let database: TestDatabase;
  let seeds: ContainerSeeds;

  beforeAll(async () => {
    database = await openTestDatabase("pglite");
    seeds = {
      config: config({
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
      }),
      logger: createLogger("silent"),
      database,
      jwtSecret: SECRET,
      passwordHasher: new FakePasswordHasher(),
    };
  });
  afterAll(async () => {
    await database?.close();
  });

  it("wires the PostgreSQL repositories, the system clock, the seeded hasher and a JWT issuer into Dependencies", () => {
    const container = createContainer(seeds);
    const deps = container.resolve(TOKENS.dependencies);

    expect(deps.posts).toBeInstanceOf(PostgresPostRepository);
    expect(deps.users).toBeInstanceOf(PostgresUserRepository);
    expect(deps.clock).toBe(systemClock);
    expect(deps.hasher).toBe(seeds.passwordHasher);
    expect(deps.idempotencyTtlMs).toBe(60_000);
  });

  it("builds each instance once", () => {
    const container = createContainer(seeds);

    expect(container.resolve(TOKENS.httpAppOptions)).toBe(container.resolve(TOKENS.httpAppOptions));
    expect(container.resolve(TOKENS.dependencies).posts).toBe(container.resolve(TOKENS.postRepository));
    expect(container.resolve(TOKENS.dependencies).tokens).toBe(container.resolve(TOKENS.tokenIssuer));
  });

  it("gives separate containers separate instances", () => {
    expect(createContainer(seeds).resolve(TOKENS.postRepository)).not.toBe(
      createContainer(seeds).resolve(TOKENS.postRepository),
    );
  });

  it("issues tokens with the configured issuer and lifetime", async () => {
    const issued = await createContainer(seeds)
      .resolve(TOKENS.tokenIssuer)
      .issue({ subject: "7", email: "a@example.com", roles: ["ROLE_USER"] });
    const payload = decodePayload(issued.token);

    expect(issued.expiresInMs).toBe(60_000);
    expect(payload).toMatchObject({ iss: "issuer-under-test", sub: "7", email: "a@example.com" });
    expect(Number(payload.exp) - Number(payload.iat)).toBe(60);
  });

  it("hands the HTTP app the configuration, the logger and the database's unavailability test", () => {
    const options = createContainer(seeds).resolve(TOKENS.httpAppOptions);

    expect(options).toMatchObject({
      jwt: { secret: SECRET, issuer: "issuer-under-test" },
      bodyLimit: 4096,
      timeZone: "Asia/Seoul",
      trustProxy: 1,
      corsOrigins: ["https://app.example.com"],
      loginThrottle: { ...DEFAULT_LOGIN_THROTTLE, max: 3 },
      metrics: false,
      timeouts: { requestMs: 10_000, connectionMs: 20_000, keepAliveMs: 65_000 },
    });
    expect(options.logger).toBe(seeds.logger);
    expect(options.isUnavailable).toBe(isDatabaseUnavailable);
  });

  it("hands the HTTP app the pool's statistics when the database has a pool, and none for PGlite", () => {
    expect(createContainer(seeds).resolve(TOKENS.httpAppOptions).poolStats).toBeUndefined();
    const poolStats = () => ({ max: 10, total: 2, idle: 1, waiting: 0 });
    const pooled = createContainer({ ...seeds, database: { ...database, poolStats } });

    expect(pooled.resolve(TOKENS.httpAppOptions).poolStats).toBe(poolStats);
  });

  it("counts throttled attempts in the database, and sweeps its expired counts", async () => {
    const container = createContainer(seeds);
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
    const container = createContainer(seeds);
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
    const cached = createContainer({ ...seeds, config: config({ POST_CACHE_MAX_BYTES: "1000000" }) });
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

    const uncached = createContainer({ ...seeds, config: config({ POST_CACHE_MAX_BYTES: "0" }) });
    expect((uncached.resolve(TOKENS.postRepository) as PostgresPostRepository).cacheStats()).toBeUndefined();
    expect(uncached.resolve(TOKENS.httpAppOptions).postCache).toBeUndefined();
  });

  it("keeps the HTTP adapter's login throttle when nothing overrides it", () => {
    const options = createContainer({ ...seeds, config: config({}) }).resolve(TOKENS.httpAppOptions);

    expect(options.loginThrottle).toEqual(DEFAULT_LOGIN_THROTTLE);
  });

  it("is ready when the database answers: GET /ready through the real app", async () => {
    const app = await buildHttpApp(createContainer(seeds).resolve(TOKENS.httpAppOptions));
    try {
      const response = await app.inject({ method: "GET", url: "/ready" });
      expect(response.statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  // Last: it closes the shared database.
  it("is not ready once the database is gone", async () => {
    const options = createContainer(seeds).resolve(TOKENS.httpAppOptions);
    await database.close();

    await expect(options.checkReady?.()).rejects.toThrow();
  });
});
