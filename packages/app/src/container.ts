// tsyringe reads the Reflect metadata API when it loads, decorators or not.
import "reflect-metadata";
import type { HttpAppOptions } from "@posts/adapters-http";
import { DEFAULT_LOGIN_THROTTLE, JwtTokenIssuer } from "@posts/adapters-http";
import type { DatabaseHandle, PostCacheView } from "@posts/adapters-postgres";
import {
  isDatabaseUnavailable,
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
import type { DependencyContainer, InjectionToken } from "tsyringe";
import { instanceCachingFactory, container as rootContainer } from "tsyringe";
import type { AppConfig } from "./config.js";
import type { ExpirySweep } from "./expiry-sweeper.js";

/**
 * What the start-up sequence has opened before the graph is wired. Opening them is
 * asynchronous and ordered (the database must answer before anything else is built), which
 * tsyringe's synchronous factories cannot express, so they come in as values.
 */
export interface ContainerSeeds {
  readonly config: AppConfig;
  readonly logger: Logger;
  readonly database: DatabaseHandle;
  /** The HS256 key, from JWT_SECRET or the generated key file. */
  readonly jwtSecret: string;
  readonly passwordHasher: PasswordHasher;
}

/** The composition root's tokens; symbols, so that no class needs a decorator. */
export const TOKENS = {
  config: Symbol("AppConfig") as InjectionToken<AppConfig>,
  logger: Symbol("Logger") as InjectionToken<Logger>,
  database: Symbol("DatabaseHandle") as InjectionToken<DatabaseHandle>,
  jwtSecret: Symbol("JwtSecret") as InjectionToken<string>,
  clock: Symbol("Clock") as InjectionToken<Clock>,
  passwordHasher: Symbol("PasswordHasher") as InjectionToken<PasswordHasher>,
  tokenIssuer: Symbol("TokenIssuer") as InjectionToken<TokenIssuer>,
  /** The posts kept in memory, or `undefined` with POST_CACHE_MAX_BYTES=0. */
  postCache: Symbol("PostCache") as InjectionToken<PostCache | undefined>,
  postRepository: Symbol("PostRepository") as InjectionToken<PostRepository>,
  userRepository: Symbol("UserRepository") as InjectionToken<UserRepository>,
  attemptCounter: Symbol("AttemptCounter") as InjectionToken<AttemptCounter>,
  /**
   * Every change of a post, numbered for the whole service (docs/change-events.md#the-events).
   * Started by `serve` before the server listens (it listens for notifications and runs the
   * sequencer), closed after.
   */
  changeEvents: Symbol("ChangeEventLog") as InjectionToken<PostgresChangeEventLog>,
  /**
   * On a PostgreSQL server, merges the trigram indexes' pending lists soon after this process
   * wrote posts, so that no request's statement merges them (absent on PGlite, whose one
   * connection would only queue the merge behind the requests). Closed by `serve` before the
   * database.
   */
  pendingLists: Symbol("TrigramPendingListCleaner") as InjectionToken<TrigramPendingListCleaner | undefined>,
  /** Every table of rows that expire, swept by the `ExpirySweeper`. */
  expirySweeps: Symbol("ExpirySweeps") as InjectionToken<readonly ExpirySweep[]>,
  dependencies: Symbol("Dependencies") as InjectionToken<Dependencies>,
  httpAppOptions: Symbol("HttpAppOptions") as InjectionToken<HttpAppOptions>,
} as const;

/**
 * Wires every adapter to its port in a fresh child container. Each factory caches its
 * instance, so the graph is built once, when `TOKENS.httpAppOptions` is resolved at start-up;
 * nothing is resolved per request.
 */
export function createContainer(seeds: ContainerSeeds): DependencyContainer {
  const container = rootContainer.createChildContainer();
  container.register(TOKENS.config, { useValue: seeds.config });
  container.register(TOKENS.logger, { useValue: seeds.logger });
  container.register(TOKENS.database, { useValue: seeds.database });
  container.register(TOKENS.jwtSecret, { useValue: seeds.jwtSecret });
  container.register(TOKENS.passwordHasher, { useValue: seeds.passwordHasher });
  container.register(TOKENS.clock, { useValue: systemClock });

  // Made here and handed to both its users: the repository, which reads and fills it, and the
  // HTTP app, which keeps JSON beside the posts it holds and reports its counts.
  container.register(TOKENS.postCache, {
    useFactory: instanceCachingFactory((c) => {
      const { maxBytes, maxPostBytes } = c.resolve(TOKENS.config).postCache;
      return maxBytes === 0 ? undefined : new PostCache({ maxBytes, maxPostBytes });
    }),
  });
  container.register(TOKENS.postRepository, {
    useFactory: instanceCachingFactory((c) => {
      const cache = c.resolve(TOKENS.postCache);
      // With standbys, the reads one may answer go through the database's standby reads.
      const { db, readStatements } = c.resolve(TOKENS.database);
      // A change's event is numbered as soon as the change committed (see PostgresChangeEventLog).
      const events = c.resolve(TOKENS.changeEvents);
      const pendingLists = c.resolve(TOKENS.pendingLists);
      return new PostgresPostRepository(db, {
        ...(cache === undefined ? {} : { cache }),
        ...(readStatements === undefined ? {} : { readStatements }),
        onChange: () => {
          events.wake();
          pendingLists?.wake();
        },
      });
    }),
  });
  container.register(TOKENS.userRepository, {
    useFactory: instanceCachingFactory((c) => {
      const { db, readStatements } = c.resolve(TOKENS.database);
      const events = c.resolve(TOKENS.changeEvents);
      return new PostgresUserRepository(db, {
        ...(readStatements === undefined ? {} : { readStatements }),
        onChange: () => events.wake(),
      });
    }),
  });
  // In the database, whatever its engine: every instance counts the same attempts.
  container.register(TOKENS.attemptCounter, {
    useFactory: instanceCachingFactory((c) => new PostgresAttemptCounter(c.resolve(TOKENS.database).db)),
  });
  container.register(TOKENS.changeEvents, {
    useFactory: instanceCachingFactory((c) => {
      const database = c.resolve(TOKENS.database);
      const logger = c.resolve(TOKENS.logger);
      return new PostgresChangeEventLog(database.db, {
        ...(database.notifications === undefined ? {} : { notifications: database.notifications }),
        onError: (error) => logger.error({ err: error }, "numbering change events failed; retrying"),
      });
    }),
  });
  container.register(TOKENS.pendingLists, {
    useFactory: instanceCachingFactory((c) => {
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
    }),
  });
  container.register(TOKENS.expirySweeps, {
    useFactory: instanceCachingFactory<readonly ExpirySweep[]>((c) => {
      const attempts = c.resolve(TOKENS.attemptCounter);
      const posts = c.resolve(TOKENS.postRepository);
      const events = c.resolve(TOKENS.changeEvents);
      const { eventsRetentionMs } = c.resolve(TOKENS.config);
      return [
        { name: "attempt counts", deleteExpired: (now) => attempts.deleteExpired(now) },
        { name: "idempotency keys", deleteExpired: (now) => posts.deleteExpiredIdempotencyKeys(now) },
        {
          name: "change events",
          deleteExpired: (now) => events.deleteNumberedBefore(new Date(now.getTime() - eventsRetentionMs)),
        },
      ];
    }),
  });
  container.register(TOKENS.tokenIssuer, {
    useFactory: instanceCachingFactory((c) => {
      const { jwt } = c.resolve(TOKENS.config);
      return new JwtTokenIssuer({
        secret: c.resolve(TOKENS.jwtSecret),
        issuer: jwt.issuer,
        ttlMs: jwt.ttlMs,
      });
    }),
  });
  container.register(TOKENS.dependencies, {
    useFactory: instanceCachingFactory<Dependencies>((c) => ({
      posts: c.resolve(TOKENS.postRepository),
      users: c.resolve(TOKENS.userRepository),
      clock: c.resolve(TOKENS.clock),
      hasher: c.resolve(TOKENS.passwordHasher),
      tokens: c.resolve(TOKENS.tokenIssuer),
      idempotencyTtlMs: c.resolve(TOKENS.config).idempotencyTtlMs,
    })),
  });
  container.register(TOKENS.httpAppOptions, {
    useFactory: instanceCachingFactory<HttpAppOptions>((c) => {
      const config = c.resolve(TOKENS.config);
      const database = c.resolve(TOKENS.database);
      // The HTTP app sees only what the cache holds and its counts.
      const postCache: PostCacheView | undefined = c.resolve(TOKENS.postCache);
      return {
        deps: c.resolve(TOKENS.dependencies),
        jwt: {
          secret: c.resolve(TOKENS.jwtSecret),
          previousSecrets: config.jwt.previousSecrets,
          issuer: config.jwt.issuer,
        },
        bodyLimit: config.bodyLimit,
        timeZone: config.timeZone,
        isUnavailable: isDatabaseUnavailable,
        checkReady: async () => {
          await database.db.selectNoFrom((eb) => eb.lit(1).as("ready")).execute();
        },
        logger: c.resolve(TOKENS.logger),
        trustProxy: config.trustProxy,
        corsOrigins: config.corsOrigins,
        loginThrottle: { ...DEFAULT_LOGIN_THROTTLE, ...config.loginThrottle },
        attemptCounter: c.resolve(TOKENS.attemptCounter),
        metrics: config.metrics && config.metricsPort !== undefined ? "own-listener" : config.metrics,
        poolStats: database.poolStats,
        ...(database.standbyStats === undefined ? {} : { standbyStats: database.standbyStats }),
        ...(postCache === undefined ? {} : { postCache }),
        changeEvents: c.resolve(TOKENS.changeEvents),
        eventStreamCaps: config.feedStreams,
        timeouts: {
          requestMs: config.http.requestTimeoutMs,
          connectionMs: config.http.connectionTimeoutMs,
          keepAliveMs: config.http.keepAliveTimeoutMs,
        },
      };
    }),
  });
  return container;
}
