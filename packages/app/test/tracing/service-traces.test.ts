import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openTestDatabase, postgresForTests, type TestDatabase } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ListeningService,
  runCommand,
  startService,
  TEST_JWT_SECRET,
} from "../support/service-process.js";
import { OtlpReceiver, type ReceivedSpan } from "./otlp-receiver.js";

/** Reports, at the service's exit, what OpenTelemetry left in it (see the file). */
const PROBE = fileURLToPath(new URL("./otel-probe.mjs", import.meta.url));

interface ProbeReport {
  /** OpenTelemetry packages loaded, by name. */
  readonly otelPackages: readonly string[];
  readonly requireHooked: boolean;
  readonly fastifyInitializationHooked: boolean;
  readonly otelGlobals: readonly string[];
}

const SERVER = 2;
const INTERNAL = 1;
const CLIENT = 3;
const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN_ID = "b7ad6b7169203331";

/** A temporary directory for the probe's report (and PGlite's data), removed afterwards. */
function useScratchDirectory(): () => string {
  let directory: string | undefined;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "posts-traces-"));
  });
  afterAll(async () => {
    if (directory !== undefined) await rm(directory, { recursive: true, force: true });
  });
  return () => {
    if (directory === undefined) throw new Error("no scratch directory yet");
    return directory;
  };
}

async function stopAndProbe(service: ListeningService, reportFile: string): Promise<ProbeReport> {
  const exit = await service.stop();
  expect(exit.code, service.output()).toBe(0);
  return JSON.parse(await readFile(reportFile, "utf8")) as ProbeReport;
}

describeNeeding(
  await postgresForTests(),
  "traces of the real process, exported as its OTEL_* variables say",
  () => {
    const scratch = useScratchDirectory();
    let database: TestDatabase;
    let receiver: OtlpReceiver;
    let service: ListeningService | undefined;

    beforeAll(async () => {
      database = await openTestDatabase("postgres");
      receiver = await OtlpReceiver.start();
    });
    afterAll(async () => {
      await service?.kill();
      await receiver?.close();
      await database?.close();
    });

    it("exports the request, its use case and its statements to the OTLP endpoint, in the caller's trace", async () => {
      const reportFile = join(scratch(), "probe-on.json");
      service = await startService({
        DATABASE_URL: database.connectionString as string,
        JWT_SECRET: TEST_JWT_SECRET,
        OTEL_TRACES_EXPORTER: "otlp",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_SERVICE_NAME: "posts-under-test",
        OTEL_BSP_SCHEDULE_DELAY: "50",
        NODE_OPTIONS: `--import=${PROBE}`,
        OTEL_PROBE_FILE: reportFile,
      });
      expect(service.logs).toContainEqual(
        expect.objectContaining({ msg: expect.stringContaining("traces on") }),
      );

      const response = await fetch(`${service.url}/api/v1/posts?size=5`, {
        headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN_ID}-01` },
      });
      expect(response.status).toBe(200);
      await response.arrayBuffer();

      let spans: ReceivedSpan[] = [];
      await expect
        .poll(
          () => {
            spans = receiver.trace(TRACE_ID);
            return spans.map((span) => span.name);
          },
          { timeout: 15_000 },
        )
        .toEqual(
          expect.arrayContaining(["GET /api/v1/posts", "listPosts", expect.stringMatching(/^pg\.query/)]),
        );

      const request = spans.find((span) => span.name === "GET /api/v1/posts") as ReceivedSpan;
      expect(request.kind).toBe(SERVER);
      expect(request.parentSpanId).toBe(CALLER_SPAN_ID);
      expect(request.attributes).toMatchObject({
        "http.route": "/api/v1/posts",
        "url.path": "/api/v1/posts",
      });
      expect(request.resource["service.name"]).toBe("posts-under-test");

      const useCase = spans.find((span) => span.name === "listPosts") as ReceivedSpan;
      expect(useCase.kind).toBe(INTERNAL);
      expect(useCase.parentSpanId).toBe(request.spanId);
      const statements = spans.filter((span) => span.name.startsWith("pg.query"));
      for (const statement of statements) {
        expect(statement.kind).toBe(CLIENT);
        expect(statement.parentSpanId).toBe(useCase.spanId);
      }
      expect(receiver.stray).toEqual([]);

      const probe = await stopAndProbe(service, reportFile);
      // The control for the test below: the same probe sees OpenTelemetry when it is on.
      expect(probe.otelPackages).toEqual(
        expect.arrayContaining([
          "@fastify/otel",
          "@opentelemetry/instrumentation-pg",
          "@opentelemetry/sdk-node",
        ]),
      );
      expect(probe.requireHooked).toBe(true);
      expect(probe.fastifyInitializationHooked).toBe(true);
      expect(probe.otelGlobals).toEqual(expect.arrayContaining(["trace", "propagation", "context"]));
    });
  },
);

describe("traces off (no exporter configured)", () => {
  const scratch = useScratchDirectory();
  let receiver: OtlpReceiver;
  let service: ListeningService | undefined;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
  });
  afterAll(async () => {
    await service?.kill();
    await receiver?.close();
  });

  it("loads no OpenTelemetry module, hooks nothing, registers no tracer provider and exports nothing", async () => {
    const reportFile = join(scratch(), "probe-off.json");
    service = await startService({
      DATA_DIR: join(scratch(), "data"),
      // An endpoint alone would turn traces on; OTEL_TRACES_EXPORTER=none keeps them off.
      OTEL_TRACES_EXPORTER: "none",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_SERVICE_NAME: "posts-under-test",
      OTEL_BSP_SCHEDULE_DELAY: "50",
      NODE_OPTIONS: `--import=${PROBE}`,
      OTEL_PROBE_FILE: reportFile,
    });
    expect(service.logs).not.toContainEqual(
      expect.objectContaining({ msg: expect.stringContaining("traces on") }),
    );

    const response = await fetch(`${service.url}/api/v1/posts`, {
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN_ID}-01` },
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();

    const probe = await stopAndProbe(service, reportFile);
    expect(probe).toEqual({
      // prom-client (GET /metrics) loads the API, a no-op while no SDK registers a provider.
      otelPackages: ["@opentelemetry/api"],
      requireHooked: false,
      fastifyInitializationHooked: false,
      otelGlobals: [],
    });
    expect(receiver.spans).toEqual([]);
    expect(receiver.stray).toEqual([]);
  });
});

describe("a traces setting the SDK would not understand", () => {
  it("refuses to start, naming the variable, before opening anything", async () => {
    const run = await runCommand([], {
      OTEL_TRACES_EXPORTER: "jaeger",
      DATA_DIR: "/nonexistent/never-created",
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("OTEL_TRACES_EXPORTER");
    expect(run.stderr).toContain('"jaeger"');
  });
});
