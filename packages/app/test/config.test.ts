import { MIN_SECRET_BYTES } from "@posts/adapters-http";
import { describe, expect, it } from "vitest";
import type { AppConfig, Environment } from "../src/config.js";
import { jwtSecretSource, loadConfig, MIN_JWT_SECRET_BYTES } from "../src/config.js";

const SECRET_32 = "x".repeat(32);

function valid(env: Environment): AppConfig {
  const result = loadConfig(env);
  if (!result.ok) throw new Error(`expected a valid configuration, got: ${result.error.join(" | ")}`);
  return result.value;
}

function problems(env: Environment): readonly string[] {
  const result = loadConfig(env);
  if (result.ok) throw new Error("expected the configuration to be refused");
  return result.error;
}

describe("loadConfig", () => {
  it("needs nothing: every variable has a default and the database is embedded under ./data", () => {
    const config = valid({});
    expect(config).toEqual({
      PORT: 8080,
      HOST: "0.0.0.0",
      DATABASE_READ_URLS: [],
      READ_REPLICA_MAX_WAIT_MS: 50,
      DATA_DIR: "./data",
      JWT_PREVIOUS_SECRETS: [],
      JWT_ISSUER: "posts-service",
      JWT_TTL_MS: 86_400_000,
      BODY_LIMIT: 16_777_216,
      APP_TIME_ZONE: "UTC",
      LOG_LEVEL: "info",
      MIGRATE_ON_START: true,
      DB_POOL_SIZE: 10,
      DB_CONNECT_TIMEOUT_MS: 3000,
      DB_STATEMENT_TIMEOUT_MS: 5000,
      DB_RETRY_WITHIN_MS: 0,
      DB_NAMED_STATEMENTS: true,
      DB_STARTUP_TIMEOUT_MS: 30_000,
      GRACE_PERIOD_MS: 10_000,
      TRUST_PROXY: false,
      CORS_ORIGINS: [],
      LOGIN_THROTTLE_MAX: 10,
      LOGIN_THROTTLE_WINDOW_MS: 60_000,
      METRICS: true,
      IDEMPOTENCY_TTL_MS: 86_400_000,
      EVENTS_RETENTION_MS: 604_800_000,
      FEED_MAX_STREAMS: 1000,
      FEED_MAX_STREAMS_PER_ADDRESS: 20,
      POST_CACHE_MAX_BYTES: 29_360_128,
      POST_CACHE_MAX_POST_BYTES: 1_048_576,
      HTTP_REQUEST_TIMEOUT_MS: 30_000,
      HTTP_CONNECTION_TIMEOUT_MS: 60_000,
      HTTP_KEEP_ALIVE_TIMEOUT_MS: 72_000,
    } satisfies AppConfig);
    expect(jwtSecretSource(config)).toEqual({ from: "file", path: "data/jwt-secret" });
  });

  it("treats blank variables as unset", () => {
    expect(valid({ PORT: "", HOST: "  ", DATABASE_URL: "", JWT_SECRET: "" })).toEqual(valid({}));
  });

  it("reads every variable", () => {
    const config = valid({
      PORT: "3000",
      HOST: "127.0.0.1",
      DATABASE_URL: "postgres://app:pw@db.internal:5432/posts",
      DATABASE_LISTEN_URL: "postgres://app:pw@primary.internal:5432/posts",
      DATABASE_READ_URLS: "postgres://app:pw@standby-a:5432/posts, postgres://app:pw@standby-b:5432/posts",
      READ_REPLICA_MAX_WAIT_MS: "20",
      DATA_DIR: "/var/lib/posts",
      JWT_SECRET: SECRET_32,
      JWT_ISSUER: "me",
      JWT_TTL_MS: "60000",
      BODY_LIMIT: "2048",
      APP_TIME_ZONE: "asia/seoul",
      LOG_LEVEL: "DEBUG",
      MIGRATE_ON_START: "false",
      DB_POOL_SIZE: "4",
      DB_CONNECT_TIMEOUT_MS: "1000",
      DB_STATEMENT_TIMEOUT_MS: "2000",
      DB_RETRY_WITHIN_MS: "4000",
      DB_NAMED_STATEMENTS: "false",
      DB_STARTUP_TIMEOUT_MS: "0",
      GRACE_PERIOD_MS: "500",
      TRUST_PROXY: "10.0.0.0/8, 127.0.0.1,loopback",
      CORS_ORIGINS: "https://app.example.com, http://localhost:5173",
      LOGIN_THROTTLE_MAX: "3",
      LOGIN_THROTTLE_WINDOW_MS: "1000",
      METRICS: "false",
      METRICS_PORT: "9464",
      NATS_URL: "nats://relay:secret@nats.internal:4222",
      IDEMPOTENCY_TTL_MS: "60000",
      EVENTS_RETENTION_MS: "3600000",
      FEED_MAX_STREAMS: "50",
      FEED_MAX_STREAMS_PER_ADDRESS: "2",
      POST_CACHE_MAX_BYTES: "1000000",
      POST_CACHE_MAX_POST_BYTES: "5000",
      HTTP_REQUEST_TIMEOUT_MS: "10000",
      HTTP_CONNECTION_TIMEOUT_MS: "20000",
      HTTP_KEEP_ALIVE_TIMEOUT_MS: "65000",
    });
    expect(config).toEqual({
      PORT: 3000,
      HOST: "127.0.0.1",
      DATABASE_URL: "postgres://app:pw@db.internal:5432/posts",
      DATABASE_LISTEN_URL: "postgres://app:pw@primary.internal:5432/posts",
      DATABASE_READ_URLS: [
        "postgres://app:pw@standby-a:5432/posts",
        "postgres://app:pw@standby-b:5432/posts",
      ],
      READ_REPLICA_MAX_WAIT_MS: 20,
      DATA_DIR: "/var/lib/posts",
      JWT_SECRET: SECRET_32,
      JWT_PREVIOUS_SECRETS: [],
      JWT_ISSUER: "me",
      JWT_TTL_MS: 60_000,
      BODY_LIMIT: 2048,
      APP_TIME_ZONE: "Asia/Seoul",
      LOG_LEVEL: "debug",
      MIGRATE_ON_START: false,
      DB_POOL_SIZE: 4,
      DB_CONNECT_TIMEOUT_MS: 1000,
      DB_STATEMENT_TIMEOUT_MS: 2000,
      DB_RETRY_WITHIN_MS: 4000,
      DB_NAMED_STATEMENTS: false,
      DB_STARTUP_TIMEOUT_MS: 0,
      GRACE_PERIOD_MS: 500,
      TRUST_PROXY: ["10.0.0.0/8", "127.0.0.1", "loopback"],
      CORS_ORIGINS: ["https://app.example.com", "http://localhost:5173"],
      LOGIN_THROTTLE_MAX: 3,
      LOGIN_THROTTLE_WINDOW_MS: 1000,
      METRICS: false,
      METRICS_PORT: 9464,
      NATS_URL: "nats://relay:secret@nats.internal:4222",
      IDEMPOTENCY_TTL_MS: 60_000,
      EVENTS_RETENTION_MS: 3_600_000,
      FEED_MAX_STREAMS: 50,
      FEED_MAX_STREAMS_PER_ADDRESS: 2,
      POST_CACHE_MAX_BYTES: 1_000_000,
      POST_CACHE_MAX_POST_BYTES: 5000,
      HTTP_REQUEST_TIMEOUT_MS: 10_000,
      HTTP_CONNECTION_TIMEOUT_MS: 20_000,
      HTTP_KEEP_ALIVE_TIMEOUT_MS: 65_000,
    } satisfies AppConfig);
    expect(jwtSecretSource(config)).toEqual({ from: "environment", secret: SECRET_32 });
  });

  it("turns the post cache off with POST_CACHE_MAX_BYTES=0, and refuses sizes that are not whole numbers", () => {
    expect(valid({ POST_CACHE_MAX_BYTES: "0" }).POST_CACHE_MAX_BYTES).toBe(0);
    expect(problems({ POST_CACHE_MAX_BYTES: "64MB", POST_CACHE_MAX_POST_BYTES: "0" })).toEqual([
      'POST_CACHE_MAX_BYTES must be a whole number at least 0, got "64MB".',
      'POST_CACHE_MAX_POST_BYTES must be a whole number at least 1, got "0".',
    ]);
  });

  it("relays events to NATS only with NATS_URL, a nats:// or tls:// URL or a list of them, never echoed", () => {
    expect(valid({}).NATS_URL).toBeUndefined();
    expect(valid({ NATS_URL: " nats://a:4222, tls://b:4222 " }).NATS_URL).toBe("nats://a:4222, tls://b:4222");
    for (const value of ["localhost:4222", "http://nats:4222", "nats://u:p@", "nats://a:4222,,x"]) {
      expect(problems({ NATS_URL: value })).toEqual([
        "NATS_URL must be a NATS server URL such as nats://127.0.0.1:4222, or a comma-separated list of them.",
      ]);
    }
  });

  it("accepts postgresql:// as well as postgres://", () => {
    expect(valid({ DATABASE_URL: "postgresql://h/db", JWT_SECRET: SECRET_32 }).DATABASE_URL).toBe(
      "postgresql://h/db",
    );
  });

  it("names the statements on a PostgreSQL server unless DB_NAMED_STATEMENTS says false", () => {
    const named = (env: Environment) =>
      valid({ DATABASE_URL: "postgres://h/db", JWT_SECRET: SECRET_32, ...env }).DB_NAMED_STATEMENTS;
    expect(named({})).toBe(true);
    expect(named({ DB_NAMED_STATEMENTS: "false" })).toBe(false);
    expect(named({ DB_NAMED_STATEMENTS: "TRUE" })).toBe(true);
  });

  it("reads DATABASE_LISTEN_URL when set (unset, the listening session goes to DATABASE_URL), which needs DATABASE_URL and is never echoed", () => {
    const listenUrl = (env: Environment) =>
      valid({ DATABASE_URL: "postgres://pooler:6432/db", JWT_SECRET: SECRET_32, ...env }).DATABASE_LISTEN_URL;
    expect(listenUrl({})).toBeUndefined();
    expect(listenUrl({ DATABASE_LISTEN_URL: " postgresql://primary:5432/db " })).toBe(
      "postgresql://primary:5432/db",
    );
    expect(
      problems({
        DATABASE_URL: "postgres://h/db",
        JWT_SECRET: SECRET_32,
        DATABASE_LISTEN_URL: "mysql://u:secret@h/db",
      }),
    ).toEqual(["DATABASE_LISTEN_URL must be a URL of the form postgres://user:password@host:5432/database."]);
    expect(problems({ DATABASE_LISTEN_URL: "postgres://h/db" })).toEqual([
      "DATABASE_LISTEN_URL names the database of DATABASE_URL: set DATABASE_URL too.",
    ]);
  });

  it("reads from no standby unless DATABASE_READ_URLS names some, and waits 50 ms for one by default", () => {
    const reads = (env: Environment) =>
      valid({ DATABASE_URL: "postgres://h/db", JWT_SECRET: SECRET_32, ...env });
    expect(reads({})).toMatchObject({ DATABASE_READ_URLS: [], READ_REPLICA_MAX_WAIT_MS: 50 });
    expect(reads({ DATABASE_READ_URLS: " , " })).toMatchObject({ DATABASE_READ_URLS: [] });
    expect(reads({ DATABASE_READ_URLS: "postgresql://s1/db", READ_REPLICA_MAX_WAIT_MS: "0" })).toMatchObject({
      DATABASE_READ_URLS: ["postgresql://s1/db"],
      READ_REPLICA_MAX_WAIT_MS: 0,
    });
  });

  it("refuses standby URLs that are not PostgreSQL URLs, never echoing them, and standbys without a primary", () => {
    expect(
      problems({
        DATABASE_URL: "postgres://h/db",
        JWT_SECRET: SECRET_32,
        DATABASE_READ_URLS: "postgres://u:secret@s1/db,mysql://u:secret@s2/db",
        READ_REPLICA_MAX_WAIT_MS: "soon",
      }),
    ).toEqual([
      "DATABASE_READ_URLS must be a comma-separated list of URLs of the form postgres://user:password@host:5432/database.",
      'READ_REPLICA_MAX_WAIT_MS must be a whole number from 0 to 2147483647, got "soon".',
    ]);
    expect(problems({ DATABASE_READ_URLS: "postgres://s1/db" })).toEqual([
      "DATABASE_READ_URLS names standbys of the DATABASE_URL server: set DATABASE_URL too.",
    ]);
  });

  it("takes the JWT secret as given, surrounding spaces included", () => {
    const secret = ` ${SECRET_32} `;
    expect(jwtSecretSource(valid({ JWT_SECRET: secret }))).toEqual({ from: "environment", secret });
  });

  it("counts the JWT secret in UTF-8 bytes, not characters", () => {
    expect(valid({ JWT_SECRET: "é".repeat(16) }).JWT_SECRET).toBe("é".repeat(16));
    expect(problems({ JWT_SECRET: "é".repeat(15) })).toEqual([
      expect.stringContaining("JWT_SECRET is 30 bytes"),
    ]);
  });

  it("holds the same JWT key floor as the HTTP adapter", () => {
    expect(MIN_JWT_SECRET_BYTES).toBe(MIN_SECRET_BYTES);
  });

  it("refuses a JWT secret of 31 bytes and says how long it must be", () => {
    expect(problems({ JWT_SECRET: "x".repeat(31) })).toEqual([
      "JWT_SECRET is 31 bytes long; it must be at least 32 bytes (generate one with: openssl rand -base64 48).",
    ]);
  });

  it("reads JWT_PREVIOUS_SECRETS as a comma-separated list of keys, each without surrounding spaces", () => {
    const older = "o".repeat(32);
    const oldest = "é".repeat(16);
    expect(
      valid({ JWT_SECRET: SECRET_32, JWT_PREVIOUS_SECRETS: ` ${older} ,, ${oldest}` }).JWT_PREVIOUS_SECRETS,
    ).toEqual([older, oldest]);
    expect(valid({ JWT_PREVIOUS_SECRETS: " , " }).JWT_PREVIOUS_SECRETS).toEqual([]);
  });

  it("refuses each previous JWT key under 32 bytes, by its place in the list and never echoing it", () => {
    const found = problems({ JWT_PREVIOUS_SECRETS: `${"a".repeat(32)},short-key,${"b".repeat(31)}` });
    expect(found).toEqual([
      "JWT_PREVIOUS_SECRETS entry 2 of 3 is 9 bytes long; it must be at least 32 bytes (generate one with: openssl rand -base64 48).",
      "JWT_PREVIOUS_SECRETS entry 3 of 3 is 31 bytes long; it must be at least 32 bytes (generate one with: openssl rand -base64 48).",
    ]);
    expect(found.join()).not.toContain("short-key");
  });

  it("takes METRICS_PORT as the port of a listener of its own, and refuses the API's port", () => {
    expect(valid({ METRICS_PORT: "9464" }).METRICS_PORT).toBe(9464);
    expect(valid({}).METRICS_PORT).toBeUndefined();
    expect(problems({ PORT: "8080", METRICS_PORT: "8080" })).toEqual([
      expect.stringContaining("METRICS_PORT must differ from PORT"),
    ]);
    expect(valid({ PORT: "0", METRICS_PORT: "0" }).METRICS_PORT).toBe(0);
  });

  it("refuses a DATABASE_URL without a JWT_SECRET", () => {
    expect(problems({ DATABASE_URL: "postgres://localhost/posts" })).toEqual([
      expect.stringContaining("JWT_SECRET is required when DATABASE_URL is set"),
    ]);
  });

  it("refuses a DATABASE_URL that is not a postgres URL, without echoing it", () => {
    for (const url of ["mysql://u:hunter2@h/db", "not a url", "postgres://"]) {
      const found = problems({ DATABASE_URL: url, JWT_SECRET: SECRET_32 });
      expect(found).toEqual([expect.stringContaining("DATABASE_URL must be a URL")]);
      expect(found.join()).not.toContain("hunter2");
    }
  });

  it.each([
    ["PORT", "http", 'PORT must be a whole number from 0 to 65535, got "http".'],
    ["PORT", "65536", 'PORT must be a whole number from 0 to 65535, got "65536".'],
    ["PORT", "-1", 'PORT must be a whole number from 0 to 65535, got "-1".'],
    ["PORT", "80.5", 'PORT must be a whole number from 0 to 65535, got "80.5".'],
    ["JWT_TTL_MS", "0", 'JWT_TTL_MS must be a whole number at least 1000, got "0".'],
    [
      "JWT_TTL_MS",
      "1500",
      'JWT_TTL_MS must be a whole number of seconds in milliseconds (a multiple of 1000), got "1500".',
    ],
    ["BODY_LIMIT", "16MB", 'BODY_LIMIT must be a whole number at least 1024, got "16MB".'],
    ["BODY_LIMIT", "1e9", 'BODY_LIMIT must be a whole number at least 1024, got "1e9".'],
    ["DB_POOL_SIZE", "0", 'DB_POOL_SIZE must be a whole number from 1 to 1000, got "0".'],
    [
      "DB_CONNECT_TIMEOUT_MS",
      "soon",
      'DB_CONNECT_TIMEOUT_MS must be a whole number from 1 to 2147483647, got "soon".',
    ],
    [
      "DB_STATEMENT_TIMEOUT_MS",
      "0",
      'DB_STATEMENT_TIMEOUT_MS must be a whole number from 1 to 2147483647, got "0".',
    ],
    [
      "DB_STARTUP_TIMEOUT_MS",
      "-5",
      'DB_STARTUP_TIMEOUT_MS must be a whole number from 0 to 2147483647, got "-5".',
    ],
    [
      "GRACE_PERIOD_MS",
      "99999999999",
      'GRACE_PERIOD_MS must be a whole number from 1 to 2147483647, got "99999999999".',
    ],
    [
      "IDEMPOTENCY_TTL_MS",
      "0",
      'IDEMPOTENCY_TTL_MS must be a whole number from 1 to 3153600000000, got "0".',
    ],
    [
      "IDEMPOTENCY_TTL_MS",
      "1d",
      'IDEMPOTENCY_TTL_MS must be a whole number from 1 to 3153600000000, got "1d".',
    ],
    [
      "IDEMPOTENCY_TTL_MS",
      "9007199254740991",
      'IDEMPOTENCY_TTL_MS must be a whole number from 1 to 3153600000000, got "9007199254740991".',
    ],
    ["LOGIN_THROTTLE_MAX", "0", 'LOGIN_THROTTLE_MAX must be a whole number at least 1, got "0".'],
    [
      "LOGIN_THROTTLE_WINDOW_MS",
      "x",
      'LOGIN_THROTTLE_WINDOW_MS must be a whole number from 1 to 2147483647, got "x".',
    ],
    ["MIGRATE_ON_START", "yes", 'MIGRATE_ON_START must be true or false, got "yes".'],
    ["DB_NAMED_STATEMENTS", "no", 'DB_NAMED_STATEMENTS must be true or false, got "no".'],
    ["METRICS", "off", 'METRICS must be true or false, got "off".'],
    [
      "HTTP_REQUEST_TIMEOUT_MS",
      "0",
      'HTTP_REQUEST_TIMEOUT_MS must be a whole number from 1 to 2147483647, got "0".',
    ],
    [
      "HTTP_KEEP_ALIVE_TIMEOUT_MS",
      "1m",
      'HTTP_KEEP_ALIVE_TIMEOUT_MS must be a whole number from 1 to 2147483647, got "1m".',
    ],
    [
      "LOG_LEVEL",
      "verbose",
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose".',
    ],
    [
      "APP_TIME_ZONE",
      "Mars/Olympus",
      'APP_TIME_ZONE must be an IANA time zone name such as UTC or Asia/Seoul, got "Mars/Olympus".',
    ],
  ])("refuses %s=%s", (name, value, message) => {
    expect(problems({ [name]: value })).toEqual([message]);
  });

  it("refuses TRUST_PROXY entries that are not addresses, ranges or keywords, naming them", () => {
    expect(problems({ TRUST_PROXY: "10.0.0.1, proxy.local, 10.0.0.0/33, ::1/64" })).toEqual([
      expect.stringMatching(/^TRUST_PROXY must be .*these are not: proxy\.local, 10\.0\.0\.0\/33\.$/),
    ]);
  });

  it("reads TRUST_PROXY as a flag or a hop count", () => {
    expect(valid({ TRUST_PROXY: "TRUE" }).TRUST_PROXY).toBe(true);
    expect(valid({ TRUST_PROXY: "false" }).TRUST_PROXY).toBe(false);
    expect(valid({ TRUST_PROXY: "2" }).TRUST_PROXY).toBe(2);
  });

  it("refuses CORS_ORIGINS entries that are not bare origins, naming them", () => {
    expect(problems({ CORS_ORIGINS: "https://ok.example, https://a.example/, *, ftp://x.example" })).toEqual([
      expect.stringMatching(
        /^CORS_ORIGINS must be .*these are not: https:\/\/a\.example\/, \*, ftp:\/\/x\.example\.$/,
      ),
    ]);
  });

  it("reads each login throttle setting apart, the other keeping its default", () => {
    expect(valid({ LOGIN_THROTTLE_MAX: "7" })).toMatchObject({
      LOGIN_THROTTLE_MAX: 7,
      LOGIN_THROTTLE_WINDOW_MS: 60_000,
    });
    expect(valid({ LOGIN_THROTTLE_WINDOW_MS: "1000" })).toMatchObject({
      LOGIN_THROTTLE_MAX: 10,
      LOGIN_THROTTLE_WINDOW_MS: 1000,
    });
  });

  it("lists every problem at once", () => {
    expect(
      problems({
        PORT: "x",
        DATABASE_URL: "postgres://localhost/posts",
        APP_TIME_ZONE: "Nowhere",
        LOG_LEVEL: "loud",
        MIGRATE_ON_START: "maybe",
      }),
    ).toEqual([
      expect.stringContaining("PORT"),
      expect.stringContaining("JWT_SECRET is required"),
      expect.stringContaining("APP_TIME_ZONE"),
      expect.stringContaining("LOG_LEVEL"),
      expect.stringContaining("MIGRATE_ON_START"),
    ]);
  });
});
