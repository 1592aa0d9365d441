import { join } from "node:path";
import type { Result } from "@posts/domain";
import { canonicalTimeZone, err, ok } from "@posts/domain";
import { type Environment, inSettingsOrder, isSet, readSettings } from "./read-settings.js";
import { MIN_JWT_SECRET_BYTES, type Settings } from "./settings.js";

export type { Environment } from "./read-settings.js";
export { MIN_JWT_SECRET_BYTES } from "./settings.js";

/** A pino level name, `silent` included. */
export type LogLevel = Settings["LOG_LEVEL"];

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
      /**
       * `DATABASE_LISTEN_URL`, else `url`: where the connection that LISTENs for notifications
       * goes, a session of its own even when `url` is a pooler in transaction mode. Never logged.
       */
      readonly listenUrl: string;
      /** `DATABASE_READ_URLS`: hot standbys of `url` that may answer reads; empty for none. Never logged. */
      readonly readUrls: readonly string[];
      /** `READ_REPLICA_MAX_WAIT_MS`: longest a read waits for a standby to catch up before the primary answers. */
      readonly readMaxWaitMs: number;
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
    /** The key every token is signed with, and tried first when verifying. */
    readonly secret: JwtSecretSource;
    /**
     * Keys tokens were signed with before `secret`, still accepted for verification (a key
     * rotation in progress); never used to sign. Absent when there are none.
     */
    readonly previousSecrets?: readonly string[];
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
  /** The port of the listener of its own that serves GET /metrics; absent: on the API's port. */
  readonly metricsPort?: number;
  /**
   * The NATS server(s) the change events are relayed to (JetStream stream `POSTS`), as given in
   * `NATS_URL`; absent when events are not relayed. It may hold credentials, so it is never logged.
   */
  readonly natsUrl?: string;
  /** How long an idempotency key of POST /api/v1/posts is remembered, in milliseconds. */
  readonly idempotencyTtlMs: number;
  /** How long change events are kept at least, in milliseconds, before the sweep forgets them. */
  readonly eventsRetentionMs: number;
  /** The most change-feed streams open at once on this instance, in all and per client address. */
  readonly feedStreams: { readonly maxStreams: number; readonly maxStreamsPerAddress: number };
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

/** Name of the generated key's file inside `DATA_DIR`. */
export const JWT_SECRET_FILE_NAME = "jwt-secret";

/**
 * Reads the configuration from `env`, as the settings schema (`settings.ts`) declares each
 * variable. Pure: it touches no file and no clock, so the JWT key file is only named here, not
 * read. Unset and blank variables take their defaults. On failure, every problem is listed in the
 * order of the schema (the README's), each a sentence naming the variable, so one restart fixes
 * them all.
 */
export function loadConfig(env: Environment): Result<AppConfig, readonly string[]> {
  const { settings, problems } = readSettings(env);
  if (isSet(env, "DATABASE_URL") && !isSet(env, "JWT_SECRET")) {
    // Every instance behind a shared database must sign with the same key, so none may invent one.
    problems.push({
      name: "JWT_SECRET",
      message:
        `JWT_SECRET is required when DATABASE_URL is set (at least ${MIN_JWT_SECRET_BYTES} bytes; ` +
        "generate one with: openssl rand -base64 48).",
    });
  }
  if (isSet(env, "DATABASE_LISTEN_URL") && !isSet(env, "DATABASE_URL")) {
    problems.push({
      name: "DATABASE_LISTEN_URL",
      message: "DATABASE_LISTEN_URL names the database of DATABASE_URL: set DATABASE_URL too.",
    });
  }
  if (settings.DATABASE_READ_URLS.length > 0 && !isSet(env, "DATABASE_URL")) {
    problems.push({
      name: "DATABASE_READ_URLS",
      message: "DATABASE_READ_URLS names standbys of the DATABASE_URL server: set DATABASE_URL too.",
    });
  }
  if (
    settings.METRICS_PORT !== undefined &&
    settings.METRICS_PORT !== 0 &&
    settings.METRICS_PORT === settings.PORT
  ) {
    problems.push({
      name: "METRICS_PORT",
      message:
        "METRICS_PORT must differ from PORT: it is a listener of its own (unset it to serve /metrics on PORT).",
    });
  }
  if (problems.length > 0) return err(inSettingsOrder(problems).map((problem) => problem.message));
  return ok(configFrom(settings));
}

function configFrom(s: Settings): AppConfig {
  const previousSecrets = s.JWT_PREVIOUS_SECRETS;
  return {
    port: s.PORT,
    host: s.HOST,
    dataDir: s.DATA_DIR,
    database:
      s.DATABASE_URL === undefined
        ? { kind: "embedded", directory: join(s.DATA_DIR, "pglite") }
        : {
            kind: "postgres",
            url: s.DATABASE_URL,
            listenUrl: s.DATABASE_LISTEN_URL ?? s.DATABASE_URL,
            poolSize: s.DB_POOL_SIZE,
            connectTimeoutMs: s.DB_CONNECT_TIMEOUT_MS,
            statementTimeoutMs: s.DB_STATEMENT_TIMEOUT_MS,
            namedStatements: s.DB_NAMED_STATEMENTS,
            readUrls: s.DATABASE_READ_URLS,
            readMaxWaitMs: s.READ_REPLICA_MAX_WAIT_MS,
          },
    jwt: {
      secret:
        s.JWT_SECRET === undefined
          ? { from: "file", path: join(s.DATA_DIR, JWT_SECRET_FILE_NAME) }
          : { from: "environment", secret: s.JWT_SECRET },
      ...(previousSecrets.length === 0 ? {} : { previousSecrets }),
      issuer: s.JWT_ISSUER,
      ttlMs: s.JWT_TTL_MS,
    },
    bodyLimit: s.BODY_LIMIT,
    timeZone: canonicalTimeZone(s.APP_TIME_ZONE),
    logLevel: s.LOG_LEVEL,
    migrateOnStart: s.MIGRATE_ON_START,
    startupTimeoutMs: s.DB_STARTUP_TIMEOUT_MS,
    gracePeriodMs: s.GRACE_PERIOD_MS,
    // A list of addresses is handed on as Fastify takes it, one comma-separated string.
    trustProxy: Array.isArray(s.TRUST_PROXY) ? s.TRUST_PROXY.join(",") : s.TRUST_PROXY,
    corsOrigins: s.CORS_ORIGINS,
    loginThrottle: {
      ...(s.LOGIN_THROTTLE_MAX === undefined ? {} : { max: s.LOGIN_THROTTLE_MAX }),
      ...(s.LOGIN_THROTTLE_WINDOW_MS === undefined ? {} : { windowMs: s.LOGIN_THROTTLE_WINDOW_MS }),
    },
    metrics: s.METRICS,
    ...(s.METRICS_PORT === undefined ? {} : { metricsPort: s.METRICS_PORT }),
    ...(s.NATS_URL === undefined ? {} : { natsUrl: s.NATS_URL }),
    idempotencyTtlMs: s.IDEMPOTENCY_TTL_MS,
    eventsRetentionMs: s.EVENTS_RETENTION_MS,
    feedStreams: { maxStreams: s.FEED_MAX_STREAMS, maxStreamsPerAddress: s.FEED_MAX_STREAMS_PER_ADDRESS },
    postCache: { maxBytes: s.POST_CACHE_MAX_BYTES, maxPostBytes: s.POST_CACHE_MAX_POST_BYTES },
    http: {
      requestTimeoutMs: s.HTTP_REQUEST_TIMEOUT_MS,
      connectionTimeoutMs: s.HTTP_CONNECTION_TIMEOUT_MS,
      keepAliveTimeoutMs: s.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    },
  };
}
