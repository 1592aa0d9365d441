import type { FastifyPluginCallback } from "fastify";
import fp from "fastify-plugin";
import { collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { Type } from "typebox";
import { errorJsonResponse } from "../errors/error-schemas.js";
import type { DatabasePoolStats } from "../http-app-options.js";
import { RequestMetrics } from "./request-metrics.js";

/** The route label of a request no route matched: one value, however many URLs are probed. */
const UNMATCHED = "unmatched";

/** What the metrics plugin is given. */
export interface MetricsOptions {
  readonly poolStats?: () => DatabasePoolStats;
}

const plugin: FastifyPluginCallback<MetricsOptions> = (app, options, done) => {
  // A registry per app, so several apps in one process (tests) never share or clash.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (options.poolStats !== undefined) registerPoolGauges(registry, options.poolStats);
  const requests = new RequestMetrics();
  for (const metric of requests.metrics()) registry.registerMetric(metric);

  app.addHook("onResponse", (request, reply, next) => {
    // The route pattern (`/api/v1/posts/:id`), never the raw URL, bounds the label values.
    requests.observe(
      request.method,
      request.routeOptions.url ?? UNMATCHED,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    next();
  });

  app.get(
    "/metrics",
    {
      schema: {
        summary: "Prometheus metrics",
        tags: ["operations"],
        response: {
          200: {
            description: "Prometheus text format",
            content: { "text/plain": { schema: Type.String() } },
          },
          401: errorJsonResponse("X-AUTH-TOKEN present but invalid"),
        },
      },
    },
    async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()),
  );
  done();
};

/** Gauges read from the pool when scraped: nothing runs between scrapes. */
function registerPoolGauges(registry: Registry, stats: () => DatabasePoolStats): void {
  new Gauge({
    name: "db_pool_max_connections",
    help: "Most connections the database pool opens",
    registers: [registry],
    collect() {
      this.set(stats().max);
    },
  });
  new Gauge({
    name: "db_pool_connections",
    help: "Open database connections, by state (idle, in_use)",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      const { total, idle } = stats();
      this.set({ state: "idle" }, idle);
      this.set({ state: "in_use" }, total - idle);
    },
  });
  new Gauge({
    name: "db_pool_waiting_requests",
    help: "Queries waiting for a database connection because every one is in use",
    registers: [registry],
    collect() {
      this.set(stats().waiting);
    },
  });
}

/**
 * Prometheus metrics on the app's own registry, served at GET /metrics: the process's default
 * metrics (CPU, memory, GC, event-loop lag) and, per method, route pattern and status, a
 * request counter `http_requests_total` and a latency histogram `http_request_duration_seconds`;
 * given `poolStats`, the database pool's `db_pool_connections{state}`, `db_pool_waiting_requests`
 * and `db_pool_max_connections`.
 */
export const metrics = fp(plugin, { name: "posts-metrics", fastify: "5.x" });
