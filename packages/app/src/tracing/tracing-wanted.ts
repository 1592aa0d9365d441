import type { Result } from "@posts/domain";
import { err, ok } from "@posts/domain";
import type { Environment } from "../config.js";

/** The values of `OTEL_TRACES_EXPORTER` the OpenTelemetry SDK for Node knows. */
export const TRACE_EXPORTERS = ["otlp", "console", "zipkin", "none"] as const;

/**
 * Whether the environment asks for traces, read without loading OpenTelemetry: an exporter named
 * in `OTEL_TRACES_EXPORTER` (other than `none`), or, with that unset, an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), OTLP being the SDK's
 * default exporter. Off otherwise, and whenever `OTEL_SDK_DISABLED=true`. An exporter name the
 * SDK does not know, or `none` beside others, is a problem, as a misspelt setting elsewhere is:
 * the SDK would only warn, and trace into nothing or into OTLP.
 */
export function tracingWanted(env: Environment): Result<boolean, readonly string[]> {
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return ok(false);
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  const unknown = exporters.filter((name) => !(TRACE_EXPORTERS as readonly string[]).includes(name));
  if (unknown.length > 0) {
    return err([
      `OTEL_TRACES_EXPORTER must be a comma list of ${TRACE_EXPORTERS.join(", ")}; "${unknown.join('", "')}" is none of them.`,
    ]);
  }
  if (exporters.includes("none") && exporters.length > 1) {
    // The SDK reads such a list as "otlp", which nobody meant.
    return err(['OTEL_TRACES_EXPORTER must be "none" alone or a list of exporters without it.']);
  }
  if (exporters.length > 0) return ok(exporters[0] !== "none");
  const endpoint = (name: string) => (env[name] ?? "").trim() !== "";
  return ok(endpoint("OTEL_EXPORTER_OTLP_ENDPOINT") || endpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"));
}
