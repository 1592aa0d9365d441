/**
 * Every environment variable the service reads, declared once: its name, type, default, bounds
 * and meaning. `loadConfig` reads the environment through this schema (`readSettings`), and the
 * settings table of `packages/app/README.md` is generated from it
 * (`pnpm --filter @posts/app settings:table`); a test fails when the README and the schema differ.
 *
 * Adding a setting is one entry below, placed where the README should list it (problems are
 * reported in this order too), then using it:
 *
 *   EXAMPLE_TIMEOUT_MS: Type.Integer({
 *     default: 5000, minimum: 1, maximum: MAX_TIMER_MS,
 *     description: "what it changes, for an operator reading the README",
 *   }),
 *
 * `config.EXAMPLE_TIMEOUT_MS` is then a number wherever the configuration goes (`AppConfig` is this
 * schema's static type), to be handed to the adapter that uses it, which restates no default.
 * Then run `pnpm --filter @posts/app settings:table`.
 *
 * What an entry may say (standard JSON Schema keywords, and a few of ours):
 * - `Type.Integer` (digits only; `minimum`, `maximum`, `multipleOf`), `Type.Boolean` (`true`,
 *   `false`, `1`, `0`), `Type.Enum` (a choice, case ignored), `Type.String`,
 *   `Type.Array(Type.String())` (a comma-separated list; blanks between commas ignored), or a
 *   `Type.Union` of those, tried in order.
 * - `default`: the value when the variable is unset or blank; without one, wrap the entry in
 *   `Type.Optional` and say what unset means in `unset` (shown in the README's Default column).
 * - `format`: a check of text, one of {@link SETTING_FORMATS}; `must` then says in words what the
 *   value must be, for the problem reported and the README.
 * - `minBytes`: the shortest text in UTF-8 bytes (keys); `must` says how to make a good one.
 * - `verbatim`: taken as given, surrounding spaces included (the value is a key's bytes).
 * - `secret`: never echoed in a problem (it may hold a password).
 */
import { DEFAULT_IDEMPOTENCY_TTL_MS } from "@posts/domain";
import { type Static, Type } from "typebox";

/** setTimeout's ceiling in milliseconds; a larger delay fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;
/** A century in milliseconds: now plus more would soon leave the range of a JavaScript Date. */
export const MAX_IDEMPOTENCY_TTL_MS = 3_153_600_000_000;
const MIB = 1_048_576;
/** How long change events are kept by default: seven days. */
export const DEFAULT_EVENTS_RETENTION_MS = 604_800_000;

/**
 * The JWT key length floor (docs/authentication.md#rotating-the-signing-key), the same as the HTTP
 * adapter's `MIN_SECRET_BYTES` (a test holds them equal). Not imported from there: refusing a bad
 * configuration should not cost loading the whole web stack first.
 */
export const MIN_JWT_SECRET_BYTES = 32;

/** The checks of text a setting's `format` may name; `readSettings` applies them. */
export const SETTING_FORMATS = ["postgres-url", "time-zone", "proxy-address", "origin", "nats-urls"] as const;

const KEY_ADVICE = `at least ${MIN_JWT_SECRET_BYTES} bytes (generate one with: openssl rand -base64 48)`;

/** The environment variables, in the order the README lists them. */
export const SETTINGS = Type.Object({
  PORT: Type.Integer({
    default: 8080,
    minimum: 0,
    maximum: 65535,
    description: "listen port; `0` picks a free port (the log says which)",
  }),
  HOST: Type.String({ default: "0.0.0.0", description: "listen address" }),
  DATABASE_URL: Type.Optional(
    Type.String({
      format: "postgres-url",
      must: "a URL of the form postgres://user:password@host:5432/database",
      secret: true,
      unset: "unset",
      description:
        "the PostgreSQL server (`postgres://` or `postgresql://`); unset = embedded PostgreSQL (PGlite) in `DATA_DIR/pglite`",
    }),
  ),
  DATABASE_LISTEN_URL: Type.Optional(
    Type.String({
      format: "postgres-url",
      must: "a URL of the form postgres://user:password@host:5432/database",
      secret: true,
      unset: "`DATABASE_URL`",
      description:
        "the same database for the connections that need a session of their own: the one that `LISTEN`s for change events (README *Change events*) and asks the primary its WAL position for standby reads (a prepared statement), and, with `NATS_URL`, the relay's publisher lease (a session advisory lock). When `DATABASE_URL` goes through a pooler in transaction mode (PgBouncer), point this at the primary directly or at a session-mode pool of the pooler, or events reach other instances' feeds only by the periodic check (about 5 s) and two instances may both believe they publish (each publish still names the stream sequence it must follow, so nothing is stored twice)",
    }),
  ),
  DATABASE_READ_URLS: Type.Array(Type.String({ format: "postgres-url", secret: true }), {
    default: [],
    must: "a comma-separated list of URLs of the form postgres://user:password@host:5432/database",
    description:
      "hot standbys of the `DATABASE_URL` server; reads (a post, pages, search, a login's user lookup) are answered by one that has replayed every write acknowledged before the read arrived (README *Beyond one database server*); none = every statement on `DATABASE_URL`",
  }),
  READ_REPLICA_MAX_WAIT_MS: Type.Integer({
    default: 50,
    minimum: 0,
    maximum: MAX_TIMER_MS,
    description: "longest a read waits for a standby to catch up before the primary answers it",
  }),
  DATA_DIR: Type.String({ default: "./data", description: "embedded database and generated JWT key" }),
  JWT_SECRET: Type.Optional(
    Type.String({
      minBytes: MIN_JWT_SECRET_BYTES,
      must: KEY_ADVICE,
      verbatim: true,
      unset: "unset",
      description:
        "HS256 key every token is signed with (shorter: refused). Required with `DATABASE_URL`. Unset in embedded mode: a random key is generated once into `DATA_DIR/jwt-secret` (mode 0600) and reused; the log says so, never the key",
    }),
  ),
  JWT_PREVIOUS_SECRETS: Type.Array(Type.String({ minBytes: MIN_JWT_SECRET_BYTES, must: KEY_ADVICE }), {
    default: [],
    description:
      "keys tokens were signed with before `JWT_SECRET`, still accepted until those tokens expire (see *Rotating the token key* below); never used to sign. Each taken without surrounding spaces",
  }),
  JWT_ISSUER: Type.String({
    default: "posts-service",
    description: "`iss` claim; tokens naming another are refused",
  }),
  JWT_TTL_MS: Type.Integer({
    default: 86_400_000,
    minimum: 1000,
    multipleOf: 1000,
    // A JWT's iat and exp are whole seconds, so exp = iat + ttl only holds for whole seconds.
    must: "a whole number of seconds in milliseconds (a multiple of 1000)",
    description: "token lifetime",
  }),
  BODY_LIMIT: Type.Integer({
    default: 16_777_216,
    minimum: 1024,
    description: "largest request body, bytes",
  }),
  APP_TIME_ZONE: Type.String({
    default: "UTC",
    format: "time-zone",
    must: "an IANA time zone name such as UTC or Asia/Seoul",
    description: "zone of every timestamp on the wire (`asia/seoul` is read as `Asia/Seoul`)",
  }),
  LOG_LEVEL: Type.Enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], {
    default: "info",
    description: "pino level of the JSON lines on stdout",
  }),
  MIGRATE_ON_START: Type.Boolean({ default: true, description: "run the migrations before listening" }),
  DB_POOL_SIZE: Type.Integer({
    default: 10,
    minimum: 1,
    maximum: 1000,
    description: "connections to a PostgreSQL server",
  }),
  DB_CONNECT_TIMEOUT_MS: Type.Integer({
    default: 3000,
    minimum: 1,
    maximum: MAX_TIMER_MS,
    description: "wait for a connection before the request fails with 503",
  }),
  DB_STATEMENT_TIMEOUT_MS: Type.Integer({
    default: 5000,
    minimum: 1,
    maximum: MAX_TIMER_MS,
    description:
      "server-side statement timeout; a connection with no answer one second past it (a stalled network) is closed, not reused, and the request gets 503",
  }),
  DB_RETRY_WITHIN_MS: Type.Integer({
    default: 0,
    minimum: 0,
    maximum: MAX_TIMER_MS,
    description:
      "how long a statement that surely changed nothing (no connection could be opened, a server that takes no writes refused it, or the server's shutdown ended it before it could commit) is sent again, and a post write whose commit a lost connection left unknown is resolved by asking the primary about its transaction (answered if it committed there, sent again if it never did), before the request fails with 503; behind Patroni and HAProxy, 10000 lets a planned switchover cost no request; 0 never sends a statement again nor resolves one",
  }),
  DB_NAMED_STATEMENTS: Type.Boolean({
    default: true,
    description:
      "run the repositories' statements as named prepared statements, parsed once per connection; `false` sends every statement unnamed: set it behind PgBouncer in transaction (or statement) mode unless PgBouncer is 1.21 or later with `max_prepared_statements` above 0",
  }),
  DB_STARTUP_TIMEOUT_MS: Type.Integer({
    default: 30_000,
    minimum: 0,
    maximum: MAX_TIMER_MS,
    description: "how long start-up retries an unreachable database before exiting 1",
  }),
  GRACE_PERIOD_MS: Type.Integer({
    default: 10_000,
    minimum: 1,
    maximum: MAX_TIMER_MS,
    description: "how long SIGTERM waits for requests in flight before exiting 1",
  }),
  TRUST_PROXY: Type.Union(
    [Type.Integer({ minimum: 0 }), Type.Boolean(), Type.Array(Type.String({ format: "proxy-address" }))],
    {
      default: false,
      must: "true, false, a number of hops, or a comma-separated list of IP addresses, CIDR ranges or loopback/linklocal/uniquelocal",
      description: "whose `X-Forwarded-*` headers are believed",
    },
  ),
  CORS_ORIGINS: Type.Array(Type.String({ format: "origin" }), {
    default: [],
    must: "a comma-separated list of origins such as https://app.example.com (scheme and host, optional port, no path or trailing slash)",
    description: "browser origins allowed by CORS; none = no CORS headers",
  }),
  LOGIN_THROTTLE_MAX: Type.Integer({
    default: 10,
    minimum: 1,
    description:
      "failed logins per email per window (5× that per client address; registrations refused as duplicates count per address too, apart), then 429. Counted in the database: every instance sees the same counts, a restart keeps them",
  }),
  LOGIN_THROTTLE_WINDOW_MS: Type.Integer({
    default: 60_000,
    minimum: 1,
    maximum: MAX_TIMER_MS,
    description: "the window of `LOGIN_THROTTLE_MAX`",
  }),
  METRICS: Type.Boolean({
    default: true,
    description: "serve Prometheus metrics at `GET /metrics`; `false` when nothing should scrape this port",
  }),
  METRICS_PORT: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 65535,
      unset: "`PORT`",
      description:
        "serve `GET /metrics` on a listener of its own on this port (and `HOST`), and not on `PORT`: scrape it there and keep it off the public network (9464 is the port Prometheus exporters of OpenTelemetry use); `0` picks a free port (the log says which); unset = on `PORT` with the API",
    }),
  ),
  NATS_URL: Type.Optional(
    Type.String({
      format: "nats-urls",
      must: "a NATS server URL such as nats://127.0.0.1:4222, or a comma-separated list of them",
      secret: true,
      unset: "unset",
      description:
        "`nats://[user:password@]host:4222` (or `tls://`, or a comma list of a cluster's servers): relay every change event to the JetStream stream `POSTS`, one instance publishing at a time; unset = no relay. Never logged",
    }),
  ),
  NATS_STREAM_REPLICAS: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 5,
      unset: "3 when `NATS_URL` names three servers or more, else 1",
      description:
        "copies JetStream keeps of the stream `POSTS` when the relay creates it: 3 on a three-node cluster, so that the loss or pause of any one node loses no event; a single server takes only 1. A stream that exists keeps its own (the log warns when it has fewer)",
    }),
  ),
  IDEMPOTENCY_TTL_MS: Type.Integer({
    default: DEFAULT_IDEMPOTENCY_TTL_MS,
    minimum: 1,
    maximum: MAX_IDEMPOTENCY_TTL_MS,
    description:
      "how long an `Idempotency-Key` of `POST /api/v1/posts` is remembered; past it the same key creates a new post",
  }),
  // The same ceiling as the keys': past a century, now minus it leaves the range of a Date.
  EVENTS_RETENTION_MS: Type.Integer({
    default: DEFAULT_EVENTS_RETENTION_MS,
    minimum: 1,
    maximum: MAX_IDEMPOTENCY_TTL_MS,
    description:
      "how long change events stay in the feed at least; resuming before the oldest kept event answers `reset` (stream) or 410 (page)",
  }),
  FEED_MAX_STREAMS: Type.Integer({
    default: 1000,
    minimum: 1,
    description:
      "most change-feed streams (`GET /api/v1/posts/events` as Server-Sent Events) one instance serves at once; past it a new stream gets 429 with `Retry-After`",
  }),
  FEED_MAX_STREAMS_PER_ADDRESS: Type.Integer({
    default: 20,
    minimum: 1,
    description:
      "most change-feed streams one client address (as `TRUST_PROXY` makes it out) holds open on one instance; past it 429 with `Retry-After`",
  }),
  POST_CACHE_MAX_BYTES: Type.Integer({
    default: 28 * MIB,
    minimum: 0,
    description:
      "memory for the posts that list and search pages read again (below); `0` turns the cache off. Counted as each post's text as held (one byte a character for Latin-1 text, two otherwise) and as its JSON's UTF-8 bytes, plus 880 bytes: about 1.6 KiB for a post of 400 ASCII characters, so the default (28 MiB) holds about 17,000 such posts. On the embedded database the current version of the posts this process wrote or read is held too, within a second budget of the same size and the same bound per post",
  }),
  POST_CACHE_MAX_POST_BYTES: Type.Integer({
    default: MIB,
    minimum: 1,
    description: "a post counted larger than this is never cached (a content may be 16 MiB)",
  }),
  HTTP_REQUEST_TIMEOUT_MS: Type.Integer({
    default: 30_000,
    minimum: 1,
    maximum: MAX_TIMER_MS,
    description: "longest a whole request, body included, may take to arrive (slow clients get 408)",
  }),
  HTTP_CONNECTION_TIMEOUT_MS: Type.Integer({
    default: 60_000,
    minimum: 1,
    maximum: MAX_TIMER_MS,
    description: "longest a socket may stay idle",
  }),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: Type.Integer({
    default: 72_000,
    minimum: 1,
    maximum: MAX_TIMER_MS,
    description:
      "how long an idle keep-alive connection stays open; above a load balancer's idle timeout (often 60 s), so that it closes first",
  }),
});

/** The settings as read from the environment: every one with a default is present. */
export type Settings = Static<typeof SETTINGS>;
