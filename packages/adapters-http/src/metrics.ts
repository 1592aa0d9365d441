import type { FastifyPluginCallback } from "fastify";
import fp from "fastify-plugin";
import { collectDefaultMetrics, Registry } from "prom-client";
import { Type } from "typebox";
import { errorJsonResponse } from "./error-schemas.js";
import { RequestMetrics } from "./request-metrics.js";

/** The route label of a request no route matched: one value, however many URLs are probed. */
const UNMATCHED = "unmatched";

const plugin: FastifyPluginCallback = (app, _options, done) => {
  // A registry per app, so several apps in one process (tests) never share or clash.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
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

/**
 * Prometheus metrics on the app's own registry, served at GET /metrics: the process's default
 * metrics (CPU, memory, GC, event-loop lag) and, per method, route pattern and status, a
 * request counter `http_requests_total` and a latency histogram `http_request_duration_seconds`.
 */
export const metrics = fp(plugin, { name: "posts-metrics", fastify: "5.x" });
