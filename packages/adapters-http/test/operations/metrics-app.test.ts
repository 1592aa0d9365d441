import { buildMetricsApp } from "@posts/adapters-http";
import { describe, expect, it } from "vitest";
import { expectEnvelope } from "../support/expectations.js";
import { buildTestApp } from "../support/test-app.js";

describe("metrics on a listener of their own", () => {
  it("are no route of the API, and the metrics app serves them, the API's requests counted", async () => {
    const { app } = await buildTestApp({ metrics: "own-listener" });
    const metricsApp = await buildMetricsApp(app);
    try {
      expectEnvelope(await app.inject({ method: "GET", url: "/metrics" }), 404, "/metrics");
      expect((await app.inject({ method: "GET", url: "/api/v1/posts" })).statusCode).toBe(200);
      const scrape = await metricsApp.inject({ method: "GET", url: "/metrics" });
      expect(scrape.statusCode).toBe(200);
      expect(scrape.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(scrape.body).toMatch(
        /http_requests_total\{method="GET",route="\/api\/v1\/posts",status_code="200"\} 1/,
      );
      expect(scrape.body).toContain("nodejs_version_info");
      expect((await metricsApp.inject({ method: "GET", url: "/api/v1/posts" })).statusCode).toBe(404);
      const document = (await app.inject({ method: "GET", url: "/openapi.json" })).json();
      expect(document.paths["/metrics"]).toBeUndefined();
    } finally {
      await metricsApp.close();
      await app.close();
    }
  });

  it("refuses to serve an app built without metrics", async () => {
    const { app } = await buildTestApp({ metrics: false });
    try {
      await expect(buildMetricsApp(app)).rejects.toThrow(/metrics: false/);
    } finally {
      await app.close();
    }
  });
});
