import { isIP } from "node:net";
import { join } from "node:path";
import type { Result } from "@posts/domain";
import { DEFAULT_IDEMPOTENCY_TTL_MS, err, ok } from "@posts/domain";

/** The process environment, or any stand-in for it in tests. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** A pino level name, `silent` included. */
export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

/** Where the data lives. */
export type DatabaseConfig =
  | {
      /** A PostgreSQL server reached through a pool. */
      readonly kind: "postgres";
      /** The `DATABASE_URL` as given; it may hold a password, so it is never logged. */
      readonly url: string;
      readonly poolSize: number;
      readonly connectTimeoutMs: number;
      readonly statementTimeoutMs: number;
      /**
       * Whether the repositories' statements run as named prepared statements (parsed once per
       * connection); off behind a pooler that cannot keep them (PgBouncer in transaction mode).
       */
      readonly namedStatements: boolean;
    }
  | {
      /** PostgreSQL in WASM (PGlite), persisted in `directory`. */
      readonly kind: "embedded";
      readonly directory: string;
    };

/**
 * Where the token-signing key comes from: the environment, or a file under `DATA_DIR` that the
 * service fills with a random key on its first start (embedded mode only).
 */
export type JwtSecretSource =
  | { readonly from: "environment"; readonly secret: string }
  | { readonly from: "file"; readonly path: string };

/** Everything the service reads from its environment, validated. */
export interface AppConfig {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly database: DatabaseConfig;
  readonly jwt: {
    readonly secret: JwtSecretSource;
    readonly issuer: string;
    readonly ttlMs: number;
  };
  readonly bodyLimit: number;
  /** A canonical IANA zone name (`Asia/Seoul` for `asia/seoul`). */
  readonly timeZone: string;
  readonly logLevel: LogLevel;
  readonly migrateOnStart: boolean;
  /** How long start-up keeps retrying an unreachable database before giving up. */
  readonly startupTimeoutMs: number;
  /** How long a SIGTERM waits for requests in flight before the process is cut short. */
  readonly gracePeriodMs: number;
  /** Fastify's `trustProxy`: false, true, a hop count, or a comma list of addresses/CIDRs. */
  readonly trustProxy: boolean | number | string;
  /** Browser origins allowed by CORS; empty means CORS stays off. */
  readonly corsOrigins: readonly string[];
  /** Overrides of the HTTP adapter's failed-login throttle; what is absent keeps its default. */
  readonly loginThrottle: { readonly max?: number; readonly windowMs?: number };
  /** Whether GET /metrics is served (and requests are counted). */
  readonly metrics: boolean;
  /**
   * The NATS server(s) the change events are relayed to (JetStream stream `POSTS`), as given in
   * `NATS_URL`; absent when events are not relayed. It may hold credentials, so it is never logged.
   */
  readonly natsUrl?: string;
  /** How long an idempotency key of POST /api/v1/posts is remembered, in milliseconds. */
  readonly idempotencyTtlMs: number;
  /**
   * The posts kept in memory for list and search pages: at most `maxBytes` (estimated), none
   * larger than `maxPostBytes`. `maxBytes` 0 turns the cache off.
   */
  readonly postCache: { readonly maxBytes: number; readonly maxPostBytes: number };
  /** Socket timeouts of the HTTP server, in milliseconds. */
  readonly http: {
    /** Longest a whole request, body included, may take to arrive. */
    readonly requestTimeoutMs: number;
    /** Longest a socket may stay idle. */
    readonly connectionTimeoutMs: number;
    /** How long an idle keep-alive connection stays open. */
    readonly keepAliveTimeoutMs: number;
  };
}

/**
 * The JWT key length floor of CONTRACT §4, the same as the HTTP adapter's `MIN_SECRET_BYTES`
 * (a test holds them equal). Not imported from there: refusing a bad configuration should not
 * cost loading the whole web stack first.
 */
export const MIN_JWT_SECRET_BYTES = 32;

/** Name of the generated key's file inside `DATA_DIR`. */
export const JWT_SECRET_FILE_NAME = "jwt-secret";

const LOG_LEVELS: readonly LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];
const MAX_TIMER_MS = 2_147_483_647; // setTimeout's ceiling; a larger delay fires at once.
const MIB = 1_048_576;
// A century: now plus more would soon leave the range of a JavaScript Date (year 275760).
const MAX_IDEMPOTENCY_TTL_MS = 3_153_600_000_000;
const PROXY_KEYWORDS = new Set(["loopback", "linklocal", "uniquelocal"]);

/**
 * Reads the configuration from `env` (CONTRACT §6 plus the operational knobs in the README).
 * Pure: it touches no file and no clock, so the JWT key file is only named here, not read.
 * Unset and blank variables take their defaults. On failure, every problem is listed, each a
 * sentence naming the variable, so one restart fixes them all.
 */
export function loadConfig(env: Environment): Result<AppConfig, readonly string[]> {
  const problems: string[] = [];
  const read = reader(env, problems);

  // Read in the order the README lists the variables, so the problems come out in that order.
  const port = read.integer("PORT", 8080, 0, 65535);
  const host = read.text("HOST", "0.0.0.0");
  const databaseUrl = read.optionalText("DATABASE_URL");
  if (databaseUrl !== undefined && !isPostgresUrl(databaseUrl)) {
    // The value is not echoed: it may carry a password.
    problems.push("DATABASE_URL must be a URL of the form postgres://user:password@host:5432/database.");
  }
  const dataDir = read.text("DATA_DIR", "./data");
  const jwt = {
    secret: jwtSecretSource(env.JWT_SECRET, databaseUrl, dataDir, problems),
    issuer: read.text("JWT_ISSUER", "posts-service"),
    ttlMs: read.integer("JWT_TTL_MS", 86_400_000, 1000, Number.MAX_SAFE_INTEGER),
  };
  if (jwt.ttlMs % 1000 !== 0) {
    // A JWT's iat and exp are whole seconds, so exp = iat + ttl only holds for whole seconds.
    problems.push(
      `JWT_TTL_MS must be a whole number of seconds in milliseconds (a multiple of 1000), got "${jwt.ttlMs}".`,
    );
  }
  const bodyLimit = read.integer("BODY_LIMIT", 16_777_216, 1024, Number.MAX_SAFE_INTEGER);
  const zone = timeZone(read.text("APP_TIME_ZONE", "UTC"), problems);
  const logLevel = read.oneOf("LOG_LEVEL", "info", LOG_LEVELS);
  const migrateOnStart = read.boolean("MIGRATE_ON_START", true);
  const pool = {
    poolSize: read.integer("DB_POOL_SIZE", 10, 1, 1000),
    connectTimeoutMs: read.integer("DB_CONNECT_TIMEOUT_MS", 3000, 1, MAX_TIMER_MS),
    statementTimeoutMs: read.integer("DB_STATEMENT_TIMEOUT_MS", 5000, 1, MAX_TIMER_MS),
    namedStatements: read.boolean("DB_NAMED_STATEMENTS", true),
  };
  const startupTimeoutMs = read.integer("DB_STARTUP_TIMEOUT_MS", 30_000, 0, MAX_TIMER_MS);
  const gracePeriodMs = read.integer("GRACE_PERIOD_MS", 10_000, 1, MAX_TIMER_MS);
  const proxy = trustProxy(read.optionalText("TRUST_PROXY"), problems);
  const origins = corsOrigins(read.optionalText("CORS_ORIGINS"), problems);
  const loginThrottleMax = read.optionalInteger("LOGIN_THROTTLE_MAX", 1, Number.MAX_SAFE_INTEGER);
  const loginThrottleWindowMs = read.optionalInteger("LOGIN_THROTTLE_WINDOW_MS", 1, MAX_TIMER_MS);
  const metrics = read.boolean("METRICS", true);
  const natsUrl = read.optionalText("NATS_URL");
  if (natsUrl !== undefined && !isNatsUrlList(natsUrl)) {
    // Not echoed: it may carry a user and password.
    problems.push(
      "NATS_URL must be a NATS server URL such as nats://127.0.0.1:4222, or a comma-separated list of them.",
    );
  }
  const idempotencyTtlMs = read.integer(
    "IDEMPOTENCY_TTL_MS",
    DEFAULT_IDEMPOTENCY_TTL_MS,
    1,
    MAX_IDEMPOTENCY_TTL_MS,
  );
  const postCache = {
    maxBytes: read.integer("POST_CACHE_MAX_BYTES", 36 * MIB, 0, Number.MAX_SAFE_INTEGER),
    maxPostBytes: read.integer("POST_CACHE_MAX_POST_BYTES", MIB, 1, Number.MAX_SAFE_INTEGER),
  };
  // The HTTP adapter's defaults, stated here so that the README and `loadConfig({})` show them.
  const http = {
    requestTimeoutMs: read.integer("HTTP_REQUEST_TIMEOUT_MS", 30_000, 1, MAX_TIMER_MS),
    connectionTimeoutMs: read.integer("HTTP_CONNECTION_TIMEOUT_MS", 60_000, 1, MAX_TIMER_MS),
    keepAliveTimeoutMs: read.integer("HTTP_KEEP_ALIVE_TIMEOUT_MS", 72_000, 1, MAX_TIMER_MS),
  };

  const config: AppConfig = {
    port,
    host,
    dataDir,
    database:
      databaseUrl === undefined
        ? { kind: "embedded", directory: join(dataDir, "pglite") }
        : { kind: "postgres", url: databaseUrl, ...pool },
    jwt,
    bodyLimit,
    timeZone: zone,
    logLevel,
    migrateOnStart,
    startupTimeoutMs,
    gracePeriodMs,
    trustProxy: proxy,
    corsOrigins: origins,
    loginThrottle: {
      ...(loginThrottleMax === undefined ? {} : { max: loginThrottleMax }),
      ...(loginThrottleWindowMs === undefined ? {} : { windowMs: loginThrottleWindowMs }),
    },
    metrics,
    ...(natsUrl === undefined ? {} : { natsUrl }),
    idempotencyTtlMs,
    postCache,
    http,
  };
  return problems.length === 0 ? ok(config) : err(problems);
}

function jwtSecretSource(
  raw: string | undefined,
  databaseUrl: string | undefined,
  dataDir: string,
  problems: string[],
): JwtSecretSource {
  // Taken as is, not trimmed: the key is whatever bytes the operator put there.
  if (raw !== undefined && raw !== "") {
    const bytes = Buffer.byteLength(raw, "utf8");
    if (bytes < MIN_JWT_SECRET_BYTES) {
      problems.push(
        `JWT_SECRET is ${bytes} bytes long; it must be at least ${MIN_JWT_SECRET_BYTES} bytes ` +
          "(generate one with: openssl rand -base64 48).",
      );
    }
    return { from: "environment", secret: raw };
  }
  if (databaseUrl !== undefined) {
    // Every instance behind a shared database must sign with the same key, so none may invent one.
    problems.push(
      `JWT_SECRET is required when DATABASE_URL is set (at least ${MIN_JWT_SECRET_BYTES} bytes; ` +
        "generate one with: openssl rand -base64 48).",
    );
  }
  return { from: "file", path: join(dataDir, JWT_SECRET_FILE_NAME) };
}

function isPostgresUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "postgres:" || url.protocol === "postgresql:") && url.hostname !== "";
  } catch {
    return false;
  }
}

function isNatsUrlList(value: string): boolean {
  return splitList(value).every((entry) => {
    try {
      const url = new URL(entry);
      return (url.protocol === "nats:" || url.protocol === "tls:") && url.hostname !== "";
    } catch {
      return false;
    }
  });
}

function timeZone(name: string, problems: string[]): string {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    problems.push(`APP_TIME_ZONE must be an IANA time zone name such as UTC or Asia/Seoul, got "${name}".`);
    return "UTC";
  }
}

function trustProxy(raw: string | undefined, problems: string[]): boolean | number | string {
  if (raw === undefined || raw.toLowerCase() === "false") return false;
  if (raw.toLowerCase() === "true") return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  const entries = splitList(raw);
  const invalid = entries.filter((entry) => !isProxyAddress(entry));
  if (invalid.length > 0) {
    problems.push(
      "TRUST_PROXY must be true, false, a number of hops, or a comma-separated list of IP addresses, " +
        `CIDR ranges or loopback/linklocal/uniquelocal; these are not: ${invalid.join(", ")}.`,
    );
  }
  return entries.join(",");
}

function isProxyAddress(entry: string): boolean {
  if (PROXY_KEYWORDS.has(entry)) return true;
  const [address = "", prefix, ...rest] = entry.split("/");
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

function corsOrigins(raw: string | undefined, problems: string[]): readonly string[] {
  if (raw === undefined) return [];
  const origins = splitList(raw);
  const invalid = origins.filter((origin) => !isOrigin(origin));
  if (invalid.length > 0) {
    problems.push(
      "CORS_ORIGINS must be a comma-separated list of origins such as https://app.example.com " +
        `(scheme and host, optional port, no path or trailing slash); these are not: ${invalid.join(", ")}.`,
    );
  }
  return origins;
}

function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.origin === value;
  } catch {
    return false;
  }
}

function splitList(raw: string): string[] {
  return raw
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
}

/** Typed readers that record a problem and answer the default when a value is unusable. */
function reader(env: Environment, problems: string[]) {
  const optionalText = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === "" ? undefined : value;
  };
  const optionalInteger = (name: string, min: number, max: number): number | undefined => {
    const raw = optionalText(name);
    if (raw === undefined) return undefined;
    const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (Number.isSafeInteger(value) && value >= min && value <= max) return value;
    const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`;
    problems.push(`${name} must be a whole number ${range}, got "${raw}".`);
    return undefined;
  };
  return {
    optionalText,
    optionalInteger,
    text: (name: string, fallback: string): string => optionalText(name) ?? fallback,
    integer: (name: string, fallback: number, min: number, max: number): number =>
      optionalInteger(name, min, max) ?? fallback,
    boolean: (name: string, fallback: boolean): boolean => {
      const raw = optionalText(name);
      if (raw === undefined) return fallback;
      const value = raw.toLowerCase();
      if (value === "true" || value === "1") return true;
      if (value === "false" || value === "0") return false;
      problems.push(`${name} must be true or false, got "${raw}".`);
      return fallback;
    },
    oneOf: <T extends string>(name: string, fallback: T, allowed: readonly T[]): T => {
      const raw = optionalText(name);
      if (raw === undefined) return fallback;
      const match = allowed.find((candidate) => candidate === raw.toLowerCase());
      if (match !== undefined) return match;
      problems.push(`${name} must be one of ${allowed.join(", ")}, got "${raw}".`);
      return fallback;
    },
  };
}
