import type { AddressInfo } from "node:net";
import closeWithGrace from "close-with-grace";
import type { Logger } from "pino";
import { boundHeapGrowth, CACHED_HEAP_GROWTH_PERCENT } from "./bound-heap-growth.js";
import type { AppConfig } from "./config.js";
import { createContainer, type ServiceResource, TOKENS } from "./container.js";
import { stopAllocationSitePretenuring } from "./no-pretenuring.js";
import { openResources } from "./open-resources.js";

/** What `main` may have started before the service, for `serve` to stop with it. */
export interface ServeExtras {
  /** OpenTelemetry, when traces are on; shut down after everything else, flushing its spans. */
  readonly tracing?: { shutdown(): Promise<void> } | undefined;
}

/**
 * Runs the service until a signal stops it, every component resolved from the composition root
 * (`createContainer`). Nothing listens before the database has answered and the migrations have
 * run: start-up opens what the graph stands on (`openResources`: the JWT key, the database,
 * waited for up to DB_STARTUP_TIMEOUT_MS and migrated unless MIGRATE_ON_START=false, argon2),
 * starts the parts of `TOKENS.lifecycle` in their order (the change event log, the trigram
 * merges, the event relay, the HTTP app, the sweep of expired rows), and only then listens. A
 * start-up failure is logged and exits 1, never leaving a half-started server.
 *
 * SIGTERM or SIGINT (close-with-grace) stops accepting connections, lets the requests in
 * flight finish (Fastify's close), closes the database and exits 0; past GRACE_PERIOD_MS, or on
 * a second signal, it exits 1 at once. An unhandled rejection or uncaught exception is logged
 * and closes the service the same way, exiting 1.
 */
export async function serve(config: AppConfig, logger: Logger, extras: ServeExtras = {}): Promise<void> {
  // What start-up opened, closed newest first.
  const resources: ServiceResource[] = [];
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

  const grace = closeWithGrace({ delay: config.GRACE_PERIOD_MS, logger }, async ({ signal, err }) => {
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

async function start(config: AppConfig, logger: Logger, resources: ServiceResource[], signal: AbortSignal) {
  stopAllocationSitePretenuring();
  if (config.POST_CACHE_MAX_BYTES > 0) boundHeapGrowth(CACHED_HEAP_GROWTH_PERCENT);
  const container = createContainer(config, logger);
  await openResources(container, { signal, opened: (resource) => resources.push(resource) });
  for (const part of container.resolve(TOKENS.lifecycle)) {
    await part.start();
    resources.push(part);
  }
  signal.throwIfAborted();

  const app = await container.resolve(TOKENS.httpApp);
  await app.listen({ port: config.PORT, host: config.HOST });
  const { address, port } = app.server.address() as AddressInfo;
  const metrics = container.resolve(TOKENS.metricsListener);
  if (metrics !== undefined) {
    // Closed before the API's server (newest first): a scrape during shutdown may go unanswered.
    resources.push(metrics);
    await metrics.start();
  }
  logger.info(
    { address, port, database: container.resolve(TOKENS.database).engine, timeZone: config.APP_TIME_ZONE },
    `posts service listening on ${address}:${port}`,
  );
}
