import { describe, expect, it } from "vitest";
import { tracingWanted } from "../../src/tracing/tracing-wanted.js";

describe("tracingWanted: traces are on only when an exporter is configured", () => {
  it.each([
    [{}, false],
    [
      { OTEL_SERVICE_NAME: "posts", OTEL_EXPORTER_OTLP_HEADERS: "x-key=1", OTEL_PROPAGATORS: "tracecontext" },
      false,
    ],
    [{ OTEL_TRACES_EXPORTER: "  " }, false],
    [{ OTEL_TRACES_EXPORTER: "otlp" }, true],
    [{ OTEL_TRACES_EXPORTER: "console" }, true],
    [{ OTEL_TRACES_EXPORTER: "otlp, zipkin" }, true],
    [{ OTEL_TRACES_EXPORTER: "none" }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" }, true],
    [{ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }, false],
    [{ OTEL_TRACES_EXPORTER: "otlp", OTEL_SDK_DISABLED: "TRUE" }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "false" }, true],
  ])("%j → %s", (env, on) => {
    expect(tracingWanted(env)).toEqual({ ok: true, value: on });
  });

  it("refuses an exporter the SDK does not know, naming it", () => {
    const result = tracingWanted({ OTEL_TRACES_EXPORTER: "otlp,jaeger" });
    expect(result.ok).toBe(false);
    expect(result.ok ? [] : result.error).toEqual([expect.stringContaining('"jaeger"')]);
  });

  it("refuses none beside other exporters, which the SDK would read as otlp", () => {
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: "console,none" }).ok).toBe(false);
  });
});
