import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accepts, type ListeningService, startService, TEST_JWT_SECRET } from "./support/service-process.js";

describe("METRICS_PORT, as a real process on the embedded database", () => {
  let dataDir: string;
  let service: ListeningService | undefined;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "posts-metrics-port-"));
  });
  afterAll(async () => {
    await service?.kill();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("serves /metrics on its own listener only, and stops it on SIGTERM with the rest", async () => {
    service = await startService({ DATA_DIR: dataDir, JWT_SECRET: TEST_JWT_SECRET, METRICS_PORT: "0" });
    const line = await service.waitForLog((entry) => entry.msg?.startsWith("metrics served on") === true);
    const metricsPort = Number(line.port);
    expect(metricsPort).not.toBe(service.port);

    expect((await fetch(`${service.url}/api/v1/posts`)).status).toBe(200);
    const onApi = await fetch(`${service.url}/metrics`);
    expect(onApi.status).toBe(404);
    const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toMatch(
      /http_requests_total\{method="GET",route="\/api\/v1\/posts",status_code="200"\} 1/,
    );

    const exit = await service.stop();
    expect(exit.code).toBe(0);
    expect(await accepts(metricsPort)).toBe(false);
    expect(await accepts(service.port)).toBe(false);
  }, 90_000);
});
