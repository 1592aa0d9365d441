import type { AddressInfo } from "node:net";
import {
  Argon2PasswordHasher,
  buildHttpApp,
  buildMetricsApp,
  cloudEventRenderer,
} from "@posts/adapters-http";
import closeWithGrace from "close-with-grace";
import type { Logger } from "pino";
import { boundHeapGrowth, CACHED_HEAP_GROWTH_PERCENT } from "./bound-heap-growth.js";
import type { AppConfig } from "./config.js";
import { createContainer, TOKENS } from "./container.js";
import { relayEventLogOf } from "./event-relay/relay-event-log.js";
import { startEventRelay } from "./event-relay/start-event-relay.js";
import { startExpirySweeper } from "./expiry-sweeper.js";
import { loadOrCreateJwtSecret } from "./load-or-create-jwt-secret.js";
import { openDatabase } from "./open-database.js";
import { prepareDatabase } from "./prepare-database.js";

/** Something opened during start-up that shutdown must close, newest first. */
interface Resource {
  readonly name: string;
  close(): Promise<void>;
}

/** What `main` may have started before the service, for `serve` to stop with it. */
export interface ServeExtras {
  /** OpenTelemetry, when traces are on; shut down after everything else, flushing its spans. */
  readonly tracing?: { shutdown(): Promise<void> } | undefined;
}

/**
 * Runs the service until a signal stops it. Nothing listens before the database has answered
 * and the migrations have run: start-up opens the database, waits for it (bounded by
 * DB_STARTUP_TIMEOUT_MS), migrates it unless MIGRATE_ON_START=false, builds the graph and the
 * HTTP app, starts the change event log (its sequencer and notifications), starts the sweep of
 * expired rows (every minute), and only then listens. A start-up
 * failure is logged and exits 1, never leaving a half-started server.
 *
 * SIGTERM or SIGINT (close-with-grace) stops accepting connections, lets the requests in
 * flight finish (Fastify's close), closes the database and exits 0; past GRACE_PERIOD_MS, or on
 * a second signal, it exits 1 at once. An unhandled rejection or uncaught exception is logged
 * and closes the service the same way, exiting 1.
 */
export async function serve(config: AppConfig, logger: Logger, extras: ServeExtras = {}): Promise<void> {
  const resources: Resource[] = [];
  // First in, so closed last: the spans of the last requests are exported before the exit.
  const { tracing } = extras;
  if (tracing !== undefined) {
    resources.push({ name: "trace exporter", close: () => tracing.shutdown() });
    logger.info("traces on: exported as the OTEL_* variables say");
  }
  const startup = new AbortController();

  const closeAll = async () => {
    for (const resource of resources.splice(0).reverse()) {
      try {
        await resource.close();
      } catch (error) {
        logger.error({ err: error }, `closing the ${resource.name} failed`);
      }
    }
  };

  const grace = closeWithGrace({ delay: config.gracePeriodMs, logger }, async ({ signal, err }) => {
    if (err !== undefined) logger.fatal({ err }, "unexpected error; shutting down");
    else logger.info({ signal }, "shutting down: no new connections, finishing the requests in flight");
    startup.abort(new Error("shutdown requested during start-up"));
    await closeAll();
    logger.info("stopped");
  });

  try {
    await start(config, logger, resources, startup.signal);
  } catch (error) {
    // A signal during start-up: close-with-grace is already closing everything and will exit.
    if (startup.signal.aborted) return;
    grace.uninstall();
    const reason = error instanceof Error ? error.message : String(error);
    logger.fatal({ err: error }, `start-up failed: ${reason}`);
    await closeAll();
    process.exit(1);
  }
}

async function start(config: AppConfig, logger: Logger, resources: Resource[], signal: AbortSignal) {
  if (config.postCache.maxBytes > 0) boundHeapGrowth(CACHED_HEAP_GROWTH_PERCENT);
  const jwtSecret = await resolveJwtSecret(config, logger);

  const database = await openDatabase(config.database, logger);
  resources.push({ name: "database", close: () => database.close() });
  const migrated = await prepareDatabase(database, {
    migrate: config.migrateOnStart,
    timeoutMs: config.startupTimeoutMs,
    logger,
    signal,
  });
  if (migrated !== undefined) logMigrations(logger, migrated.applied);

  const passwordHasher = await Argon2PasswordHasher.create();
  const container = createContainer({ config, logger, database, jwtSecret, passwordHasher });
  // Closed after the HTTP server, whose open event streams read it until then.
  const changeEvents = container.resolve(TOKENS.changeEvents);
  await changeEvents.start();
  resources.push({ name: "change event log", close: () => changeEvents.close() });
  const pendingLists = container.resolve(TOKENS.pendingLists);
  if (pendingLists !== undefined) {
    resources.push({ name: "trigram pending-list merges", close: () => pendingLists.close() });
  }
  // With NATS_URL: the same CloudEvents as the feed's, relayed to JetStream (closed before the log).
  const render = cloudEventRenderer(config.timeZone);
  const relayed = relayEventLogOf(changeEvents, (event) => ({
    number: event.number,
    type: event.type,
    body: render(event),
  }));
  const relay = startEventRelay(config, relayed, logger);
  if (relay !== undefined) resources.push({ name: "event relay", close: () => relay.stop() });
  const app = await buildHttpApp(container.resolve(TOKENS.httpAppOptions));
  // Fastify's close stops the listener, ends idle keep-alive connections, answers 503 to new
  // requests on busy ones, and resolves once the requests in flight have been answered.
  resources.push({ name: "HTTP server", close: () => app.close() });
  // Closed before the server and the database (resources close newest first).
  const sweeper = startExpirySweeper({
    sweeps: container.resolve(TOKENS.expirySweeps),
    clock: container.resolve(TOKENS.clock),
    logger,
  });
  resources.push({ name: "expiry sweeper", close: () => sweeper.stop() });
  signal.throwIfAborted();

  await app.listen({ port: config.port, host: config.host });
  const { address, port } = app.server.address() as AddressInfo;
  if (config.metrics && config.metricsPort !== undefined) {
    const metricsApp = await buildMetricsApp(app);
    // Closed before the API's server (newest first): a scrape during shutdown may go unanswered.
    resources.push({ name: "metrics listener", close: () => metricsApp.close() });
    await metricsApp.listen({ port: config.metricsPort, host: config.host });
    const listening = metricsApp.server.address() as AddressInfo;
    logger.info(
      { address: listening.address, port: listening.port },
      `metrics served on ${listening.address}:${listening.port}`,
    );
  }
  logger.info(
    { address, port, database: database.engine, timeZone: config.timeZone },
    `posts service listening on ${address}:${port}`,
  );
}

async function resolveJwtSecret(config: AppConfig, logger: Logger): Promise<string> {
  const source = config.jwt.secret;
  if (source.from === "environment") return source.secret;
  const stored = await loadOrCreateJwtSecret(source.path);
  // The path, never the key.
  if (stored.created) {
    logger.warn(
      { file: source.path },
      `JWT_SECRET is not set: generated a signing key and stored it in ${source.path} (mode 0600); ` +
        "later starts reuse it. Set JWT_SECRET to choose the key yourself.",
    );
  } else {
    logger.info(
      { file: source.path },
      `JWT_SECRET is not set: using the signing key stored in ${source.path}`,
    );
  }
  return stored.secret;
}

function logMigrations(logger: Logger, applied: readonly string[]) {
  if (applied.length === 0) logger.info("database schema is up to date");
  else logger.info({ applied }, `applied ${applied.length} database migration(s)`);
}
