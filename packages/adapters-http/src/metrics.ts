import type { FastifyPluginCallback } from "fastify";
import fp from "fastify-plugin";
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";
import { Type } from "typebox";
import { errorJsonResponse } from "./error-schemas.js";

/** Seconds; finer than prom-client's defaults at the low end, where an API's requests live. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** The route label of a request no route matched: one value, however many URLs are probed. */
const UNMATCHED = "unmatched";

interface RouteSeries {
  readonly count: ReturnType<Counter["labels"]>;
  readonly latency: ReturnType<Histogram["labels"]>;
}

const plugin: FastifyPluginCallback = (app, _options, done) => {
  // A registry per app, so several apps in one process (tests) never share or clash.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: "http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status",
    labelNames: ["method", "route", "status_code"] as const,
    registers: [registry],
  });
  const durations = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from receiving a request to sending its response, by method, route pattern and status",
    labelNames: ["method", "route", "status_code"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  // Label children looked up once per (method, route, status): prom-client would otherwise
  // hash the label object on every request.
  const series = new Map<string, RouteSeries>();

  app.addHook("onResponse", (request, reply, next) => {
    // The route pattern (`/api/v1/posts/:id`), never the raw URL, bounds the label values.
    const route = request.routeOptions.url ?? UNMATCHED;
    const status = String(reply.statusCode);
    const key = `${request.method} ${route} ${status}`;
    let entry = series.get(key);
    if (entry === undefined) {
      const labels = [request.method, route, status] as const;
      entry = { count: requests.labels(...labels), latency: durations.labels(...labels) };
      series.set(key, entry);
    }
    entry.count.inc();
    entry.latency.observe(reply.elapsedTime / 1000);
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

/**
 * Prometheus metrics on the app's own registry, served at GET /metrics: the process's default
 * metrics (CPU, memory, GC, event-loop lag) and, per method, route pattern and status, a
 * request counter `http_requests_total` and a latency histogram `http_request_duration_seconds`.
 */
export const metrics = fp(plugin, { name: "posts-metrics", fastify: "5.x" });
