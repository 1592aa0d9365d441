import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { LATENCY_BUCKETS, RequestMetrics } from "../../src/operations/request-metrics.js";

const LABELS = ["method", "route", "status_code"] as const;

/** The same observations through prom-client's own Counter and Histogram. */
function reference(observations: ReadonlyArray<readonly [string, string, number, number]>) {
  const registry = new Registry();
  const counter = new Counter({
    name: "http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status",
    labelNames: LABELS,
    registers: [registry],
  });
  const histogram = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from receiving a request to sending its response, by method, route pattern and status",
    labelNames: LABELS,
    buckets: [...LATENCY_BUCKETS],
    registers: [registry],
  });
  for (const [method, route, status, seconds] of observations) {
    const labels = { method, route, status_code: String(status) };
    counter.inc(labels);
    histogram.observe(labels, seconds);
  }
  return registry;
}

function lean(observations: ReadonlyArray<readonly [string, string, number, number]>) {
  const registry = new Registry();
  const metrics = new RequestMetrics();
  for (const metric of metrics.metrics()) registry.registerMetric(metric);
  for (const [method, route, status, seconds] of observations)
    metrics.observe(method, route, status, seconds);
  return { registry, metrics };
}

describe("RequestMetrics", () => {
  it("prints exactly what prom-client's Counter and Histogram print for the same requests", async () => {
    let seed = 11;
    const next = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const routes = ["/api/v1/posts", "/api/v1/posts/:id", "unmatched", 'a "quoted" \\ route'];
    const observations = Array.from({ length: 5000 }, () => {
      // Bounds themselves, values between them, and beyond the last.
      const seconds = next(4) === 0 ? LATENCY_BUCKETS[next(LATENCY_BUCKETS.length)]! : next(12_000) / 1000;
      return [
        ["GET", "POST", "PATCH"][next(3)]!,
        routes[next(routes.length)]!,
        [200, 201, 404, 503][next(4)]!,
        seconds,
      ] as const;
    });
    const expected = await reference(observations).metrics();
    const actual = await lean(observations).registry.metrics();
    expect(actual.split("\n").sort()).toStrictEqual(expected.split("\n").sort());
    expect(actual).toContain(
      'http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/api/v1/posts"',
    );
  });

  it("starts over after a reset: no series until the next request", async () => {
    const { registry, metrics } = lean([["GET", "/x", 200, 0.002]]);
    expect(await registry.metrics()).toContain(
      'http_requests_total{method="GET",route="/x",status_code="200"} 1',
    );
    registry.resetMetrics();
    const text = await registry.metrics();
    expect(text).not.toContain("route=");
    metrics.observe("GET", "/x", 200, 0.002);
    expect(await registry.metrics()).toContain(
      'http_requests_total{method="GET",route="/x",status_code="200"} 1',
    );
  });
});
