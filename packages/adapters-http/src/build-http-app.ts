import cors from "@fastify/cors";
import rateLimit from "@fastify/rate-limit";
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from "fastify";
import { attemptCounterStore } from "./auth/attempt-counter-store.js";
import { authentication } from "./auth/authentication.js";
import { failureThrottles } from "./auth/failure-throttle.js";
import { assertSecretLength } from "./auth/jwt-secret.js";
import { routeGuards } from "./auth/route-guards.js";
import { clientErrorHandler } from "./errors/client-error-handler.js";
import { envelopeBuilder, envelopeSender } from "./errors/error-envelope.js";
import { errorHandler } from "./errors/error-handler.js";
import { HTTP_MESSAGES } from "./errors/http-messages.js";
import { notFoundBeforeBody, notFoundHandler } from "./errors/not-found-handler.js";
import { rendererFor } from "./events/cloud-event.js";
import type { EventFeedStats } from "./events/event-feed-stats.js";
import { bodyEncodingCheck } from "./http/body-encoding-check.js";
import { ByteBudget } from "./http/byte-budget.js";
import { expectContinue } from "./http/expect-continue.js";
import { gracefulClose } from "./http/graceful-close.js";
import { hostCheck } from "./http/host-check.js";
import { jsonObjectValidatorCompiler } from "./http/json-object-validator-compiler.js";
import { JsonThread } from "./http/json-thread.js";
import { largeBodies } from "./http/large-bodies.js";
import { lazyRequestLogger } from "./http/lazy-request-logger.js";
import { lingeringClose } from "./http/lingering-close.js";
import { helmetHeaders, securityHeaders } from "./http/security-headers.js";
import { useStrictUtf8JsonParser } from "./http/strict-utf8-json-parser.js";
import { timestampFormatter } from "./http/timestamp-formatter.js";
import type { HttpAppOptions } from "./http-app-options.js";
import { metrics } from "./operations/metrics.js";
import { openApi } from "./operations/openapi.js";
import { operationalRoutes } from "./operations/operational-routes.js";
import { eventRoutes } from "./routes/event-routes.js";
import {
  DEFAULT_LARGE_POST_BUDGET_BYTES,
  DEFAULT_LARGE_POST_WAIT_MS,
  largePosts,
} from "./routes/large-posts.js";
import { postEntityTags } from "./routes/post-entity-tags.js";
import { postRoutes } from "./routes/post-routes.js";
import { postSerializer } from "./routes/post-serializer.js";
import type { RouteContext } from "./routes/route-context.js";
import { userRoutes } from "./routes/user-routes.js";

const DEFAULT_RETRY_AFTER_SECONDS = 5;
/** The methods that change something: their 503s are the writes refused that /metrics counts. */
const WRITE_METHODS: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const NO_EVENT_FEED: EventFeedStats = {
  streams: 0,
  bufferedBytes: 0,
  stalled: 0,
  readersActive: 0,
  readersWaiting: 0,
  readersWaited: 0,
};
// Node's default header limit (16 KiB) bounds a URL anyway; a shorter limit would turn a long
// numeric id into a router error instead of "no such post".
const MAX_PARAM_LENGTH = 16_384;

/**
 * Builds the HTTP API that docs/README.md describes over `options.deps`: every route, authentication,
 * the one error mapping, OpenAPI at /openapi.json and /docs, /health, /ready and (unless
 * turned off) /metrics. Answers the app ready but not listening, so tests can `inject`
 * and the caller decides where to listen. Throws when a JWT key is shorter than
 * 32 bytes, the time zone is unknown, or the throttle settings are not positive integers.
 */
export async function buildHttpApp(options: HttpAppOptions): Promise<FastifyInstance> {
  for (const key of [options.jwt.secret, ...(options.jwt.previousSecrets ?? [])]) assertSecretLength(key);
  const format = timestampFormatter(options.timeZone);
  const retryAfterSeconds = options.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS;
  const buildEnvelope = envelopeBuilder(() => options.deps.clock.now(), format);
  const sendEnvelope = envelopeSender(buildEnvelope);
  // Writes answered 503 because the database was unavailable, for /metrics.
  let writesRefused = 0;
  const handleError = errorHandler({
    sendEnvelope,
    isUnavailable: options.isUnavailable,
    retryAfterSeconds,
    onUnavailable: (request) => {
      if (WRITE_METHODS.has(request.method)) writesRefused += 1;
    },
  });
  const { timeouts } = options;
  const requestTimeout = timeouts.requestMs;

  const app = Fastify({
    ...loggerOptions(options.logger),
    logController: new LogController({ disableRequestLogging: options.logRequests === false }),
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: options.bodyLimit,
    // Fastify's types omit the hop count, which it accepts (proxy-addr) like a boolean or a list.
    trustProxy: (options.trustProxy ?? false) as boolean | string,
    // Fastify's defaults, stated because the contract depends on them: such bodies are 400.
    onProtoPoisoning: "error",
    onConstructorPoisoning: "error",
    requestTimeout,
    http: {
      connectionsCheckingInterval:
        timeouts.checkIntervalMs ?? Math.min(5000, Math.max(250, Math.floor(requestTimeout / 4))),
      // At construction, where Node derives headersTimeout from requestTimeout and refuses a
      // headersTimeout above it. Fastify sets only server.requestTimeout, afterwards, leaving
      // headersTimeout at 60 s: Node 20 then never cuts a request whose headers are in, and a
      // body trickled one byte at a time holds its connection for as long as the client likes.
      requestTimeout,
      headersTimeout: Math.min(60_000, requestTimeout),
    },
    connectionTimeout: timeouts.connectionMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    // gracefulClose answers instead, with the contract's envelope.
    return503OnClosing: false,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // A URL the router cannot decode never reaches the error handler on its own.
    frameworkErrors: handleError,
    // Refusals Node makes before any route runs (408, 431, 400) never reach the error handler.
    clientErrorHandler: clientErrorHandler({ buildEnvelope, headers: helmetHeaders() }),
  }) as unknown as FastifyInstance;

  app.setValidatorCompiler(jsonObjectValidatorCompiler);
  // Only JSON bodies are accepted; without this, text/plain would be parsed and reach validation (400, not 415).
  app.removeContentTypeParser("text/plain");
  // Parses bodies and writes posts of megabytes off the event loop; ends with the app.
  const jsonThread = new JsonThread();
  app.addHook("onClose", () => jsonThread.close());
  useStrictUtf8JsonParser(app, jsonThread);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(notFoundHandler(app, sendEnvelope));

  await app.register(lingeringClose, { bodyLimit: options.bodyLimit });
  await app.register(expectContinue, { bodyLimit: options.bodyLimit });
  await app.register(securityHeaders);
  await app.register(hostCheck, { sendEnvelope });
  if (options.corsOrigins !== undefined && options.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: [...options.corsOrigins],
      methods: ["GET", "HEAD", "POST", "PATCH", "DELETE"],
      allowedHeaders: ["Content-Type", "X-AUTH-TOKEN", "If-Match", "If-None-Match", "Idempotency-Key"],
      exposedHeaders: ["Location", "Link", "Retry-After", "ETag", "Idempotent-Replayed"],
      maxAge: 600,
    });
  }
  // After CORS, so a browser can read the 503; before authentication, which it spares.
  await app.register(gracefulClose, { sendEnvelope, retryAfterSeconds });
  // No limit of its own (global: false): the failure throttles use it, counting in the shared store.
  await app.register(rateLimit, {
    global: false,
    store: attemptCounterStore(options.attemptCounter, () => options.deps.clock.now()),
  });
  await app.register(authentication, options.jwt);
  app.addHook("onRequest", notFoundBeforeBody(app, sendEnvelope));
  await app.register(bodyEncodingCheck, { sendEnvelope });
  // A budget of its own: a PATCH holds its large body's room while it waits for room for its
  // answer among the large posts' reads, which never wait for a body's, so neither waits on itself.
  const bodies = new ByteBudget(options.largePosts?.bodyBudgetBytes ?? DEFAULT_LARGE_POST_BUDGET_BYTES);
  // After the checks that refuse a body without reading it, so that those never wait for room.
  await app.register(largeBodies, {
    budget: bodies,
    waitMs: options.largePosts?.waitMs ?? DEFAULT_LARGE_POST_WAIT_MS,
    bodyLimit: options.bodyLimit,
    busy: (reply) =>
      sendEnvelope(reply.header("retry-after", String(retryAfterSeconds)), 503, {
        message: HTTP_MESSAGES.unavailable,
      }),
  });
  // Before every route: @fastify/swagger collects routes as they are added.
  await app.register(openApi);
  // Set by the event routes, registered after the metrics that read it.
  let eventFeedStats: (() => EventFeedStats) | undefined;
  const serializer = postSerializer(format, options.postCache, jsonThread);
  const reads = largePosts(options.deps, serializer, options.largePosts);
  if (options.metrics !== false) {
    const postCache = options.postCache;
    await app.register(metrics, {
      eventFeedStats:
        options.changeEvents === undefined ? undefined : () => eventFeedStats?.() ?? NO_EVENT_FEED,
      route: options.metrics !== "own-listener",
      poolStats: options.poolStats,
      partitionIdsLeft: options.partitionIdsLeft,
      // Called on the cache itself: a class instance's method loses its `this` when passed alone.
      postCacheStats: postCache === undefined ? undefined : () => postCache.stats(),
      standbyStats: options.standbyStats,
      primaryStats: options.primaryStats,
      writesRefused: () => writesRefused,
      largePostStats: () => reads.stats(),
      largeBodyStats: () => bodies.stats(),
    });
  }

  const context: RouteContext = {
    deps: options.deps,
    format,
    sendEnvelope,
    guards: routeGuards(sendEnvelope),
    entityTags: postEntityTags(options.timeZone),
    serializer,
    largePosts: reads,
    retryAfterSeconds,
  };
  await app.register(operationalRoutes, { sendEnvelope, checkReady: options.checkReady, retryAfterSeconds });
  if (options.changeEvents !== undefined) {
    await app.register(eventRoutes, {
      log: options.changeEvents,
      render: rendererFor(format),
      sendEnvelope,
      retryAfterSeconds,
      ...(options.eventStreamHeartbeatMs === undefined
        ? {}
        : { heartbeatMs: options.eventStreamHeartbeatMs }),
      ...(options.eventStreamCaps === undefined ? {} : { caps: options.eventStreamCaps }),
      ...(options.eventStreamStallMs === undefined ? {} : { stallMs: options.eventStreamStallMs }),
      onError: (error) => app.log.error({ err: error }, "reading the change event log failed"),
      exposeStats: (read) => {
        eventFeedStats = read;
      },
    });
  }
  await app.register(postRoutes, context);
  await app.register(userRoutes, {
    ...context,
    throttles: failureThrottles(app, options.loginThrottle),
  });

  await app.ready();
  return app;
}

function loggerOptions(logger: HttpAppOptions["logger"]): Partial<FastifyServerOptions> {
  if (logger === undefined || typeof logger === "boolean") return { logger: logger ?? false };
  return { loggerInstance: logger };
}
