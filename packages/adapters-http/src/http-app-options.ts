import type { AttemptCounter, ChangeEventLog, Dependencies, ReadPost } from "@posts/domain";
import type { FastifyServerOptions } from "fastify";
import type { ThrottleSettings } from "./auth/failure-throttle.js";
import type { StreamCapSettings } from "./events/stream-caps.js";

/**
 * Socket timeouts, in milliseconds. The three bounds are required: the service reads them from
 * its settings, and an embedding server chooses its own.
 */
export interface HttpTimeouts {
  /** Longest a whole request, body included, may take to arrive (slowloris). */
  readonly requestMs: number;
  /** Longest a socket may stay idle, headers and responses included. */
  readonly connectionMs: number;
  /**
   * How often Node checks connections against `requestMs` (its default, 30 s, would let a
   * slow request live almost twice as long). Default a quarter of `requestMs`, from 250 ms to 5 s.
   */
  readonly checkIntervalMs?: number;
  /**
   * How long an idle keep-alive connection stays open; keep it above the idle timeout of a load
   * balancer in front (often 60 s), so that the balancer, not this server, closes it (no reset races).
   */
  readonly keepAliveMs: number;
}

// The statistics below are the slices of adapters-postgres's own (`StandbyReadStats`,
// `PostCacheStats`) that /metrics shows, declared here again because adapters never import one
// another; the app hands the one to the other, so the compiler checks that they still agree.

/** How the database's connection pool is used at the moment of asking (GET /metrics). */
export interface DatabasePoolStats {
  /** Most connections the pool opens. */
  readonly max: number;
  /** Connections open, idle or in use. */
  readonly total: number;
  /** Open connections nobody is using. */
  readonly idle: number;
  /** Callers waiting for a connection. */
  readonly waiting: number;
}

/** One hot standby as GET /metrics shows it. */
export interface StandbyStats {
  /** Where it is (`host:port/database`), never its credentials. */
  readonly label: string;
  /** Whether it is in the rotation. */
  readonly up: boolean;
  /** Bytes of WAL it has yet to replay, as last seen; `undefined` when unknown. */
  readonly replayLagBytes: number | undefined;
  /** Reads it answered. */
  readonly reads: number;
}

/**
 * The changes of primary the database pool has seen behind its URL (GET /metrics): the slice of
 * adapters-postgres's `PrimaryStats` this adapter shows, declared again here as adapters never
 * import one another; the app, handing one to the other, checks that they agree.
 */
export interface DatabasePrimaryStats {
  /** Times a new connection found another server the primary (a promotion), since the process started. */
  readonly changes: number;
  /**
   * Statements sent again after a failure that proved they changed nothing, since the process
   * started, by why: no connection, a server taking no writes, cut short before they could commit.
   */
  readonly resent: Readonly<Record<"no-connection" | "read-only" | "uncommitted", number>>;
  /**
   * Writes whose commit a lost connection left unknown, since the process started, by what the
   * primary said of them: committed (answered), uncommitted (sent again), unresolved (failed).
   */
  readonly resolved: Readonly<Record<"committed" | "uncommitted" | "unresolved", number>>;
}

/**
 * Reads answered by hot standbys since the process started (GET /metrics): the slice of
 * adapters-postgres's `StandbyReadStats` this adapter shows, declared again here as adapters
 * never import one another; the app, handing one to the other, checks that they agree.
 */
export interface StandbyReadStats {
  readonly standbys: readonly StandbyStats[];
  /** Reads a standby could have answered that the primary answered, by reason. */
  readonly fallbacks: Readonly<Record<string, number>>;
  /** Reads a standby answered, as of its last replayed change, while the primary did not answer. */
  readonly readsWithoutPrimary: number;
  /** Statements that asked the primary for its WAL position, each serving a batch of reads. */
  readonly positionQueries: number;
}

/**
 * What a post repository's cache has done since it was made, and holds now (GET /metrics):
 * adapters-postgres's `PostCacheStats`, declared again here as adapters never import one
 * another; the app, handing one to the other, checks that they agree.
 */
export interface PostCacheStats {
  /** Posts a page found cached at the version it lists. */
  readonly hits: number;
  /** Posts a page did not find cached at the version it lists. */
  readonly misses: number;
  /** Pages read as ids and versions first, their posts then taken from the cache. */
  readonly pagesThroughCache: number;
  /** Pages read in full in one statement, because recent pages were mostly not cached. */
  readonly pagesInFull: number;
  /** Posts held now. */
  readonly posts: number;
  /** Bytes they are estimated to take. */
  readonly bytes: number;
}

/** What the HTTP adapter may ask of a post repository that keeps posts in memory. */
export interface PostCacheAccess {
  /**
   * Whether `post` is the object the cache holds for its id, which the repository answers again
   * for as long as that version is current: its JSON is then worth keeping beside it.
   */
  holds(post: ReadPost): boolean;
  /** Counts and sizes, read at each scrape of /metrics. */
  stats(): PostCacheStats;
}

/** Everything `buildHttpApp` needs. */
export interface HttpAppOptions {
  /** The ports the use cases run on. */
  readonly deps: Dependencies;
  /**
   * HS256 verification of `X-AUTH-TOKEN`: tokens signed with `secret`, or with one of
   * `previousSecrets` while a key rotation is in progress, naming `issuer`. Every key must be at
   * least 32 bytes.
   */
  readonly jwt: {
    readonly secret: string;
    readonly previousSecrets?: readonly string[];
    readonly issuer: string;
  };
  /** Largest request body, in bytes. Larger → 413. */
  readonly bodyLimit: number;
  /** IANA zone of every timestamp on the wire (`UTC`, `Asia/Seoul`). */
  readonly timeZone: string;
  /** Recognizes "database down or timed out": answered 503 with Retry-After instead of 500. */
  readonly isUnavailable?: (error: unknown) => boolean;
  /** GET /ready answers 200 when this resolves, the 503 envelope when it throws. Default: always ready. */
  readonly checkReady?: () => Promise<void>;
  /** A pino instance, `true` for Fastify's own pino, or `false` (default) for no logs. */
  readonly logger?: FastifyServerOptions["loggerInstance"] | boolean;
  /** Log one line per request and per response (Fastify's request logging). Default true. */
  readonly logRequests?: boolean;
  /** Fastify's `trustProxy`: whom to believe about X-Forwarded-For/-Proto/-Host. Default false. */
  readonly trustProxy?: boolean | string | number;
  /** Origins allowed to call the API from a browser. Default none: no CORS headers at all. */
  readonly corsOrigins?: readonly string[];
  /**
   * Failed-login throttle; failures past it are answered 429 with Retry-After
   * (`maxPerAddress` defaults to `5 * max`); registrations refused as duplicates (409) count
   * per address too, with the same per-address limit.
   */
  readonly loginThrottle: ThrottleSettings;
  /**
   * Where the throttles count failures. Give every instance of the service the same one (the
   * database's), so that N instances allow no more attempts than one and a restart forgets none;
   * tests without a database use the domain's in-memory one.
   */
  readonly attemptCounter: AttemptCounter;
  /**
   * Prometheus metrics on the app's own registry. `true` (the default): GET /metrics on this
   * app. `"own-listener"`: requests are counted, but /metrics is no route of this app:
   * `buildMetricsApp(app)` serves it, for a port that is not the API's. `false`: none.
   */
  readonly metrics?: boolean | "own-listener";
  /** Read at each scrape of /metrics for the `db_pool_*` gauges; none when absent (no pool). */
  readonly poolStats?: () => DatabasePoolStats;
  /**
   * Read at each scrape of /metrics for `posts_partition_ids_left`: ids the posts' sequence may
   * still give before the last partition is full (`undefined` until first read); no gauge when absent.
   */
  readonly partitionIdsLeft?: () => number | undefined;
  /** Read at each scrape of /metrics for `db_primary_changes_total`; none when absent (no pool). */
  readonly primaryStats?: () => DatabasePrimaryStats;
  /** Read at each scrape of /metrics for the `db_standby_*` metrics; none when absent (no standbys). */
  readonly standbyStats?: () => StandbyReadStats;
  /**
   * Given when `deps.posts` caches posts: the JSON of each post the cache holds is then kept
   * beside it (for as long as that object lives) and written again from there, and /metrics
   * serves the `post_cache_*` metrics. Absent: every answer is serialized afresh.
   */
  readonly postCache?: PostCacheAccess;
  /**
   * The budget within which posts too large to read beside others (the repository's outlines)
   * are read and sent, and how long a request waits for room before 503. Default: 16 MiB, 10 s.
   */
  readonly largePosts?: LargePostSettings;
  /** Socket timeouts; see {@link HttpTimeouts}. */
  readonly timeouts: HttpTimeouts;
  /** Retry-After, in seconds, of 503 answers. Default 5. */
  readonly retryAfterSeconds?: number;
  /**
   * The log GET /api/v1/posts/events serves (docs/change-events.md). Absent: the path is no route
   * of its own (GET answers as for a non-numeric post id).
   */
  readonly changeEvents?: ChangeEventLog;
  /** How often an open event stream gets a keep-alive comment, in ms. Default and most 15 000. */
  readonly eventStreamHeartbeatMs?: number;
  /**
   * The most event streams open at once, in all and from one client address; past either, a
   * stream is refused with 429 and Retry-After. Absent: no cap.
   */
  readonly eventStreamCaps?: StreamCapSettings;
  /**
   * How long an event stream's client, or a JSON page's, may leave what it was sent untaken before
   * it is disconnected, in ms. Default 30 000.
   */
  readonly eventStreamStallMs?: number;
}

/** How the posts too large to read beside others (outlines, from the repository) are read and sent. */
export interface LargePostSettings {
  /**
   * The most bytes of such posts' content read and being written at once, over the whole
   * process. A post larger than this is read alone. Default `DEFAULT_LARGE_POST_BUDGET_BYTES`
   * (routes/large-posts.ts).
   */
  readonly budgetBytes?: number;
  /**
   * The most bytes of request bodies over `LARGE_BODY_ABOVE_BYTES` (64 KiB) read and being
   * handled at once, over the whole process: a budget of its own, beside `budgetBytes`. A body
   * larger than this is read alone. Default `DEFAULT_LARGE_POST_BUDGET_BYTES`.
   */
  readonly bodyBudgetBytes?: number;
  /**
   * How long a request waits for room before it is answered 503 with Retry-After, in ms; a page
   * waits so only for its first large post, before anything is sent; a large body, before it
   * is read. Default `DEFAULT_LARGE_POST_WAIT_MS`.
   */
  readonly waitMs?: number;
}
