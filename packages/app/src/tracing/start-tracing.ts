import { FastifyOtelInstrumentation } from "@fastify/otel";
import { PgInstrumentation } from "@opentelemetry/instrumentation-pg";
import { NodeSDK, type NodeSDKConfiguration } from "@opentelemetry/sdk-node";
import { traceUseCases } from "./use-case-spans.js";

/** The service's name in traces unless `OTEL_SERVICE_NAME` (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`) says otherwise. */
export const DEFAULT_SERVICE_NAME = "posts-service";

/** What {@link startTracing} started; `shutdown` exports the spans still buffered, then stops. */
export interface Tracing {
  shutdown(): Promise<void>;
}

/** Overrides for tests: where finished spans go instead of the exporters the environment names. */
export interface TracingOverrides {
  readonly spanProcessors?: NodeSDKConfiguration["spanProcessors"];
}

/**
 * Starts OpenTelemetry traces as the standard `OTEL_*` variables of `process.env` say (exporter,
 * endpoint, protocol, headers, service name, resource attributes, sampler, propagators), through
 * the official SDK, and answers how to stop it. Call it only when `tracingWanted` says traces are
 * on, and before anything imports `pg` or builds a Fastify instance: loading this module is what
 * costs, so the service imports it only then.
 *
 * Three kinds of spans, one trace per request, continuing the caller's W3C `traceparent`:
 * - the request (`@fastify/otel`): `GET /api/v1/posts/:id`, kind SERVER, with `http.route`,
 *   `http.request.method`, `url.path` (never the query, which may hold search text) and
 *   `http.response.status_code`; hooks and the handler get no spans of their own;
 * - its use case (`getPost`…), see `traceUseCases`;
 * - each statement (`@opentelemetry/instrumentation-pg`), `pg.query:<prepared name> <database>`,
 *   with pool checkouts and new connections: `db.operation.name` (SELECT…), `db.query.text` the
 *   parameterized text, never the values, `db.postgresql.plan` the prepared statement's name;
 *   statements outside any span (migrations, the expiry sweep) make none.
 * Only traces: metrics stay Prometheus's (GET /metrics) and logs pino's, whatever
 * `OTEL_METRICS_EXPORTER` and `OTEL_LOGS_EXPORTER` say.
 */
export function startTracing(overrides: TracingOverrides = {}): Tracing {
  const sdk = new NodeSDK({
    ...(hasServiceName(process.env) ? {} : { serviceName: DEFAULT_SERVICE_NAME }),
    ...overrides,
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        instrumentHooks: false,
        // The use-case span stands for the handler.
        instrumentHandler: false,
        requestHook: (span, request) => {
          const route = request.routeOptions.url;
          span.updateName(route === undefined ? request.method : `${request.method} ${route}`);
          span.setAttribute("url.path", request.url.split("?", 1)[0] ?? "/");
        },
      }),
      // pg is CommonJS. The service imports it from ESM, and Node loads an ESM import of a
      // CommonJS module without the `require` hook this instrumentation listens on; but pg's own
      // `require("./client")` and `require("pg-pool")` pass that hook, and the instrumentation
      // patches `Client.prototype.query` and the pool's `connect` there, which the adapter's
      // direct statements and Kysely both go through. So this only has to run before pg is
      // first loaded. The alternative, import-in-the-middle's loader hook (`--import`), would
      // have to be on every command line that starts the service and would wrap every ES module
      // it loads, for a module that needs none of that. Tests fail if statement spans stop.
      new PgInstrumentation({
        requireParentSpan: true,
        // The instrumentation works the operation out for its metrics only; on the span, it
        // lets a backend group statements by kind (SELECT, INSERT…).
        requestHook: (span, { query }) => {
          span.setAttribute(
            "db.operation.name",
            query.text.trimStart().split(/\s/, 1)[0]?.toUpperCase() ?? "",
          );
        },
      }),
    ],
  });
  sdk.start();
  const stopUseCases = traceUseCases();
  return {
    shutdown: async () => {
      stopUseCases();
      await sdk.shutdown();
    },
  };
}

function hasServiceName(env: NodeJS.ProcessEnv): boolean {
  if ((env.OTEL_SERVICE_NAME ?? "").trim() !== "") return true;
  return (env.OTEL_RESOURCE_ATTRIBUTES ?? "")
    .split(",")
    .some((pair) => pair.trim().startsWith("service.name="));
}
