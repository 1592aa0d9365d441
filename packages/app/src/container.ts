// tsyringe reads the Reflect metadata API when it loads, decorators or not.
import "reflect-metadata";
import type { AddressInfo } from "node:net";
import type { HttpAppOptions } from "@posts/adapters-http";
import {
  buildHttpApp,
  buildMetricsApp,
  cloudEventReference,
  cloudEventRenderer,
  JwtTokenIssuer,
} from "@posts/adapters-http";
import type { DatabaseHandle, PostCacheView } from "@posts/adapters-postgres";
import {
  CurrentPosts,
  isDatabaseUnavailable,
  PartitionsAhead,
  POSTS_PARTITION_SPAN,
  PostCache,
  PostgresAttemptCounter,
  PostgresChangeEventLog,
  PostgresPostRepository,
  PostgresUserRepository,
  TrigramPendingListCleaner,
} from "@posts/adapters-postgres";
import type {
  AttemptCounter,
  Clock,
  Dependencies,
  PasswordHasher,
  PostRepository,
  TokenIssuer,
  UserRepository,
} from "@posts/domain";
import { systemClock } from "@posts/domain";
import type { Logger } from "pino";
import type { DependencyContainer, FactoryFunction, InjectionToken } from "tsyringe";
import { instancePerContainerCachingFactory, container as rootContainer } from "tsyringe";
import type { AppConfig } from "./config.js";
import { relayEventLogOf } from "./event-relay/relay-event-log.js";
import { type RunningEventRelay, startEventRelay } from "./event-relay/start-event-relay.js";
import { type ExpirySweep, type ExpirySweeper, startExpirySweeper } from "./expiry-sweeper.js";

/** The HTTP app `buildHttpApp` answers. */
export type HttpApp = Awaited<ReturnType<typeof buildHttpApp>>;

/** Something start-up opened that shutdown must close. */
export interface ServiceResource {
  /** What it is, for the log line when closing it fails. */
  readonly name: string;
  /** Releases it; called once, at shutdown or after a failed start-up. */
  close(): Promise<void>;
}

/** A piece of the running service that starts once the graph is resolved, and stops at shutdown. */
export interface ServicePart extends ServiceResource {
  /** Starts it; `close` is called only once this has resolved. */
  start(): Promise<void>;
}

/**
 * The composition root's tokens, each typed with what it resolves to; symbols, so that no class
 * needs a decorator. `config` and `logger` are given to {@link createContainer}; `jwtSecret`,
 * `database` and `passwordHasher` are opened asynchronously before anything resolves
 * (`openResources`), or registered by a test; every other token is a factory over these.
 */
export const TOKENS = {
  config: Symbol("AppConfig") as InjectionToken<AppConfig>,
  logger: Symbol("Logger") as InjectionToken<Logger>,
  /** The HS256 key, from JWT_SECRET or the generated key file. */
  jwtSecret: Symbol("JwtSecret") as InjectionToken<string>,
  /** The database, answering and migrated. */
  database: Symbol("DatabaseHandle") as InjectionToken<DatabaseHandle>,
  passwordHasher: Symbol("PasswordHasher") as InjectionToken<PasswordHasher>,
  clock: Symbol("Clock") as InjectionToken<Clock>,
  tokenIssuer: Symbol("TokenIssuer") as InjectionToken<TokenIssuer>,
  /** The posts kept in memory, or `undefined` with POST_CACHE_MAX_BYTES=0. */
  postCache: Symbol("PostCache") as InjectionToken<PostCache | undefined>,
  currentPosts: Symbol("CurrentPosts") as InjectionToken<CurrentPosts | undefined>,
  postRepository: Symbol("PostRepository") as InjectionToken<PostRepository>,
  userRepository: Symbol("UserRepository") as InjectionToken<UserRepository>,
  attemptCounter: Symbol("AttemptCounter") as InjectionToken<AttemptCounter>,
  /**
   * Every change of a post, numbered for the whole service (docs/change-events.md#the-events).
   * Started before the server listens (it listens for notifications and runs the sequencer),
   * closed after it.
   */
  changeEvents: Symbol("ChangeEventLog") as InjectionToken<PostgresChangeEventLog>,
  /**
   * On a PostgreSQL server, merges the trigram indexes' pending lists soon after this process
   * wrote posts, so that no request's statement merges them (absent on PGlite, whose one
   * connection would only queue the merge behind the requests). Closed before the database.
   */
  pendingLists: Symbol("TrigramPendingListCleaner") as InjectionToken<TrigramPendingListCleaner | undefined>,
  /**
   * Makes the partitions of posts ahead of the ids (at start and every 10 s), on either engine:
   * an insert past the last partition fails. Closed before the database.
   */
  partitionsAhead: Symbol("PartitionsAhead") as InjectionToken<PartitionsAhead>,
  /** Every table of rows that expire, swept by the expiry sweeper. */
  expirySweeps: Symbol("ExpirySweeps") as InjectionToken<readonly ExpirySweep[]>,
  /** The ports the use cases run on. */
  dependencies: Symbol("Dependencies") as InjectionToken<Dependencies>,
  httpAppOptions: Symbol("HttpAppOptions") as InjectionToken<HttpAppOptions>,
  /** The HTTP app, built (asynchronously) once per container, not listening. */
  httpApp: Symbol("HttpApp") as InjectionToken<Promise<HttpApp>>,
  /** With NATS_URL, the relay of the change events to JetStream; `undefined` without. */
  eventRelay: Symbol("EventRelay") as InjectionToken<ServicePart | undefined>,
  /**
   * With METRICS_PORT (and METRICS on), GET /metrics on a listener of its own; `undefined`
   * without. Started once the API listens, closed before the API's server.
   */
  metricsListener: Symbol("MetricsListener") as InjectionToken<ServicePart | undefined>,
  /** Deletes expired rows every minute while the service runs. */
  expirySweeper: Symbol("ExpirySweeper") as InjectionToken<ServicePart>,
  /** What `serve` starts, in this order, before listening, and closes in the reverse order. */
  lifecycle: Symbol("Lifecycle") as InjectionToken<readonly ServicePart[]>,
} as const;

/**
 * Registers the whole object graph in a fresh child container of tsyringe's root, over `config`
 * and `logger`; `TOKENS.jwtSecret`, `TOKENS.database` and `TOKENS.passwordHasher` are registered
 * once opened (`openResources`). Each factory builds its instance once per container
 * (`instancePerContainerCachingFactory`): a child container that replaces one registration (a
 * clock, a repository, a hasher) resolves every component that depends on it afresh, over its
 * replacement, while its parent keeps its own. Nothing is resolved per request.
 */
export function createContainer(config: AppConfig, logger: Logger): DependencyContainer {
  const container = rootContainer.createChildContainer();
  container.register(TOKENS.config, { useValue: config });
  container.register(TOKENS.logger, { useValue: logger });
  container.register(TOKENS.clock, { useValue: systemClock });

  // Made here and handed to both its users: the repository, which reads and fills it, and the
  // HTTP app, which keeps JSON beside the posts it holds and reports its counts.
  factory(container, TOKENS.postCache, (c) => {
    const { POST_CACHE_MAX_BYTES: maxBytes, POST_CACHE_MAX_POST_BYTES: maxPostBytes } = c.resolve(
      TOKENS.config,
    );
    return maxBytes === 0 ? undefined : new PostCache({ maxBytes, maxPostBytes });
  });
  // On the embedded database alone, which no other process writes: the posts as this process's
  // writes left them, so that a GET of one post does not wait behind a long statement on the
  // database's one session. Within the post cache's bounds, beside it.
  factory(container, TOKENS.currentPosts, (c) => {
    const { POST_CACHE_MAX_BYTES: maxBytes, POST_CACHE_MAX_POST_BYTES: maxPostBytes } = c.resolve(
      TOKENS.config,
    );
    const { engine } = c.resolve(TOKENS.database);
    return engine !== "pglite" || maxBytes === 0 ? undefined : new CurrentPosts({ maxBytes, maxPostBytes });
  });
  factory(container, TOKENS.postRepository, (c) => {
    const cache = c.resolve(TOKENS.postCache);
    const currentPosts = c.resolve(TOKENS.currentPosts);
    // With standbys, the reads one may answer go through the database's standby reads.
    const { db, readStatements } = c.resolve(TOKENS.database);
    // A change's event is numbered as soon as the change committed (see PostgresChangeEventLog).
    const events = c.resolve(TOKENS.changeEvents);
    const pendingLists = c.resolve(TOKENS.pendingLists);
    return new PostgresPostRepository(db, {
      ...(cache === undefined ? {} : { cache }),
      ...(currentPosts === undefined ? {} : { currentPosts }),
      ...(readStatements === undefined ? {} : { readStatements }),
      onChange: () => {
        events.wake();
        pendingLists?.wake();
      },
    });
  });
  factory(container, TOKENS.userRepository, (c) => {
    const { db, readStatements } = c.resolve(TOKENS.database);
    const events = c.resolve(TOKENS.changeEvents);
    const currentPosts = c.resolve(TOKENS.currentPosts);
    return new PostgresUserRepository(db, {
      ...(readStatements === undefined ? {} : { readStatements }),
      ...(currentPosts === undefined ? {} : { currentPosts }),
      onChange: () => events.wake(),
    });
  });
  // In the database, whatever its engine: every instance counts the same attempts.
  factory(container, TOKENS.attemptCounter, (c) => new PostgresAttemptCounter(c.resolve(TOKENS.database).db));
  factory(container, TOKENS.changeEvents, (c) => {
    const database = c.resolve(TOKENS.database);
    const logger = c.resolve(TOKENS.logger);
    return new PostgresChangeEventLog(database.db, {
      ...(database.notifications === undefined ? {} : { notifications: database.notifications }),
      ...(database.primaryStats === undefined
        ? {}
        : { primaryChanges: () => database.primaryStats?.().changes ?? 0 }),
      onError: (error) => logger.error({ err: error }, "numbering change events failed; retrying"),
    });
  });
  factory(container, TOKENS.pendingLists, (c) => {
    const database = c.resolve(TOKENS.database);
    if (database.engine !== "postgres") return undefined;
    const logger = c.resolve(TOKENS.logger);
    return new TrigramPendingListCleaner(database.db, {
      onError: (error) =>
        logger.warn(
          { err: error },
          "merging the trigram indexes' pending lists failed; writes will merge them",
        ),
    });
  });
  factory(container, TOKENS.partitionsAhead, (c) => {
    const logger = c.resolve(TOKENS.logger);
    return new PartitionsAhead(c.resolve(TOKENS.database).db, {
      onError: (error) => logger.warn({ err: error }, "making partitions of posts ahead failed; retrying"),
      onMade: (made, idsLeft) => logger.info({ made, idsLeft }, `made ${made} partitions of posts ahead`),
      onFewIdsLeft: (idsLeft) =>
        logger.warn(
          { idsLeft },
          `fewer than ${POSTS_PARTITION_SPAN} ids left in the partitions of posts: new posts will be refused (503) once they are used`,
        ),
    });
  });
  factory(container, TOKENS.expirySweeps, (c) => {
    const attempts = c.resolve(TOKENS.attemptCounter);
    const posts = c.resolve(TOKENS.postRepository);
    const events = c.resolve(TOKENS.changeEvents);
    const { EVENTS_RETENTION_MS: retentionMs } = c.resolve(TOKENS.config);
    return [
      { name: "attempt counts", deleteExpired: (now) => attempts.deleteExpired(now) },
      { name: "idempotency keys", deleteExpired: (now) => posts.deleteExpiredIdempotencyKeys(now) },
      {
        name: "change events",
        deleteExpired: (now) => events.deleteNumberedBefore(new Date(now.getTime() - retentionMs)),
      },
    ];
  });
  factory(container, TOKENS.tokenIssuer, (c) => {
    const config = c.resolve(TOKENS.config);
    return new JwtTokenIssuer({
      secret: c.resolve(TOKENS.jwtSecret),
      issuer: config.JWT_ISSUER,
      ttlMs: config.JWT_TTL_MS,
    });
  });
  factory(container, TOKENS.dependencies, (c) => ({
    posts: c.resolve(TOKENS.postRepository),
    users: c.resolve(TOKENS.userRepository),
    clock: c.resolve(TOKENS.clock),
    hasher: c.resolve(TOKENS.passwordHasher),
    tokens: c.resolve(TOKENS.tokenIssuer),
    idempotencyTtlMs: c.resolve(TOKENS.config).IDEMPOTENCY_TTL_MS,
  }));
  factory(container, TOKENS.httpAppOptions, (c) => {
    const config = c.resolve(TOKENS.config);
    const database = c.resolve(TOKENS.database);
    // The HTTP app sees only what the cache holds and its counts.
    const postCache: PostCacheView | undefined = c.resolve(TOKENS.postCache);
    return {
      deps: c.resolve(TOKENS.dependencies),
      jwt: {
        secret: c.resolve(TOKENS.jwtSecret),
        previousSecrets: config.JWT_PREVIOUS_SECRETS,
        issuer: config.JWT_ISSUER,
      },
      bodyLimit: config.BODY_LIMIT,
      timeZone: config.APP_TIME_ZONE,
      isUnavailable: isDatabaseUnavailable,
      checkReady: async () => {
        await database.db.selectNoFrom((eb) => eb.lit(1).as("ready")).execute();
      },
      logger: c.resolve(TOKENS.logger),
      // A list of addresses is handed on as Fastify takes it, one comma-separated string.
      trustProxy: Array.isArray(config.TRUST_PROXY) ? config.TRUST_PROXY.join(",") : config.TRUST_PROXY,
      corsOrigins: config.CORS_ORIGINS,
      loginThrottle: { max: config.LOGIN_THROTTLE_MAX, windowMs: config.LOGIN_THROTTLE_WINDOW_MS },
      attemptCounter: c.resolve(TOKENS.attemptCounter),
      // With METRICS_PORT, requests are counted here and /metrics is served by TOKENS.metricsListener.
      metrics:
        config.METRICS && config.METRICS_PORT !== undefined ? ("own-listener" as const) : config.METRICS,
      poolStats: database.poolStats,
      partitionIdsLeft: () => c.resolve(TOKENS.partitionsAhead).idsLeft,
      ...(database.primaryStats === undefined ? {} : { primaryStats: database.primaryStats }),
      ...(database.standbyStats === undefined ? {} : { standbyStats: database.standbyStats }),
      ...(postCache === undefined ? {} : { postCache }),
      changeEvents: c.resolve(TOKENS.changeEvents),
      eventStreamCaps: {
        maxStreams: config.FEED_MAX_STREAMS,
        maxStreamsPerAddress: config.FEED_MAX_STREAMS_PER_ADDRESS,
      },
      timeouts: {
        requestMs: config.HTTP_REQUEST_TIMEOUT_MS,
        connectionMs: config.HTTP_CONNECTION_TIMEOUT_MS,
        keepAliveMs: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      },
    };
  });
  factory(container, TOKENS.httpApp, (c) => buildHttpApp(c.resolve(TOKENS.httpAppOptions)));
  factory(container, TOKENS.eventRelay, (c) => {
    const config = c.resolve(TOKENS.config);
    if (config.NATS_URL === undefined) return undefined;
    let relay: RunningEventRelay | undefined;
    return {
      name: "event relay",
      start: async () => {
        // The same CloudEvents as the feed's, so that the stream carries the feed's bytes; an
        // event too large for the NATS server goes as a reference to the feed's copy.
        const render = cloudEventRenderer(config.APP_TIME_ZONE);
        const events = relayEventLogOf(c.resolve(TOKENS.changeEvents), (event) => ({
          number: event.number,
          type: event.type,
          body: render(event),
          reference: () => cloudEventReference(event),
        }));
        relay = startEventRelay(config, events, c.resolve(TOKENS.logger));
      },
      close: async () => relay?.stop(),
    };
  });
  factory(container, TOKENS.metricsListener, (c) => {
    const config = c.resolve(TOKENS.config);
    const port = config.METRICS_PORT;
    if (!config.METRICS || port === undefined) return undefined;
    let metricsApp: HttpApp | undefined;
    return {
      name: "metrics listener",
      start: async () => {
        metricsApp = await buildMetricsApp(await c.resolve(TOKENS.httpApp));
        await metricsApp.listen({ port, host: config.HOST });
        const { address, port: listening } = metricsApp.server.address() as AddressInfo;
        c.resolve(TOKENS.logger).info(
          { address, port: listening },
          `metrics served on ${address}:${listening}`,
        );
      },
      close: async () => metricsApp?.close(),
    };
  });
  factory(container, TOKENS.expirySweeper, (c) => {
    let sweeper: ExpirySweeper | undefined;
    return {
      name: "expiry sweeper",
      start: async () => {
        sweeper = startExpirySweeper({
          sweeps: c.resolve(TOKENS.expirySweeps),
          clock: c.resolve(TOKENS.clock),
          logger: c.resolve(TOKENS.logger),
        });
      },
      close: async () => sweeper?.stop(),
    };
  });
  factory(container, TOKENS.lifecycle, (c) => {
    const changeEvents = c.resolve(TOKENS.changeEvents);
    const pendingLists = c.resolve(TOKENS.pendingLists);
    const partitionsAhead = c.resolve(TOKENS.partitionsAhead);
    const relay = c.resolve(TOKENS.eventRelay);
    return [
      // Closed after the HTTP server, whose open event streams read it until then.
      { name: "change event log", start: () => changeEvents.start(), close: () => changeEvents.close() },
      ...(pendingLists === undefined
        ? []
        : [
            { name: "trigram pending-list merges", start: async () => {}, close: () => pendingLists.close() },
          ]),
      {
        name: "partitions of posts ahead",
        start: async () => partitionsAhead.start(),
        close: () => partitionsAhead.close(),
      },
      // Closed before the log it reads.
      ...(relay === undefined ? [] : [relay]),
      // Fastify's close stops the listener, ends idle keep-alive connections, answers 503 to new
      // requests on busy ones, and resolves once the requests in flight have been answered.
      {
        name: "HTTP server",
        start: async () => {
          await c.resolve(TOKENS.httpApp);
        },
        close: async () => (await c.resolve(TOKENS.httpApp)).close(),
      },
      // Closed first: its runs use the database the others close after it.
      c.resolve(TOKENS.expirySweeper),
    ];
  });
  return container;
}

/** Registers `make` under `token`, building its instance once per container that resolves it. */
function factory<T>(
  container: DependencyContainer,
  token: InjectionToken<T>,
  make: FactoryFunction<T>,
): void {
  container.register(token, { useFactory: instancePerContainerCachingFactory(make) });
}
