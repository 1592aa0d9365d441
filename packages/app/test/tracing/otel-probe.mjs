// Loaded into the service under test with NODE_OPTIONS=--import=<this file>, before anything
// else: at exit it writes to OTEL_PROBE_FILE what OpenTelemetry left in the process.
import { hasSubscribers } from "node:diagnostics_channel";
import { writeFileSync } from "node:fs";
import Module, { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const requireAtStart = Module.prototype.require;
const OTEL_PACKAGE =
  /\/node_modules\/(@opentelemetry\/[^/]+|@fastify\/otel|require-in-the-middle|import-in-the-middle)\//;

process.on("exit", () => {
  const file = process.env.OTEL_PROBE_FILE;
  if (file === undefined) return;
  const report = {
    // CommonJS modules land in this cache however they were loaded, an ESM import included;
    // every OpenTelemetry package the service would load is CommonJS.
    otelPackages: [...new Set(Object.keys(require.cache).map((path) => OTEL_PACKAGE.exec(path)?.[1]))]
      .filter((name) => name !== undefined)
      .sort(),
    // require-in-the-middle replaces it to see every require.
    requireHooked: Module.prototype.require !== requireAtStart,
    // @fastify/otel and the use-case spans subscribe here to hook every Fastify instance.
    fastifyInitializationHooked: hasSubscribers("fastify.initialization"),
    // Where @opentelemetry/api keeps the registered tracer provider, propagator and context manager.
    otelGlobals: Object.keys(globalThis[Symbol.for("opentelemetry.js.api.1")] ?? {}),
  };
  writeFileSync(file, JSON.stringify(report));
});
