import Fastify, { type FastifyInstance } from "fastify";
import { securityHeaders } from "../http/security-headers.js";
import { metricsRegistryOf, scrapeHandler } from "./metrics.js";

/**
 * A Fastify app that serves only GET /metrics, the metrics of `app` (built by `buildHttpApp`
 * with `metrics: "own-listener"`, or `true`), for the caller to listen on a port of its own: the
 * API's port then tells nobody the process's memory, versions and traffic. Closing `app` does
 * not close it. Throws when `app` was built with `metrics: false`.
 */
export async function buildMetricsApp(app: FastifyInstance): Promise<FastifyInstance> {
  const registry = metricsRegistryOf(app);
  if (registry === undefined) throw new Error("buildMetricsApp: the app was built with metrics: false");
  const metricsApp = Fastify({ logger: false });
  await metricsApp.register(securityHeaders);
  metricsApp.get("/metrics", scrapeHandler(registry));
  await metricsApp.ready();
  return metricsApp;
}
