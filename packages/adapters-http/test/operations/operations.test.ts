import { describe, expect, it } from "vitest";
import { expectEnvelope, POST_PROPERTIES } from "../support/expectations.js";
import { buildTestApp, useTestApp } from "../support/test-app.js";

describe("operations", () => {
  const t = useTestApp();

  it("GET /health answers 200 {status: ok}", async () => {
    const response = await t().app.inject({ method: "GET", url: "/health" });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toStrictEqual({ status: "ok" });
  });

  it("GET /ready answers 200 when checkReady resolves, 503 envelope with Retry-After when it throws", async () => {
    let ready = true;
    const { app } = await buildTestApp({
      checkReady: async () => {
        if (!ready) throw new Error("connect ECONNREFUSED");
      },
    });
    const up = await app.inject({ method: "GET", url: "/ready" });
    expect(up.statusCode).toBe(200);
    expect(up.json()).toStrictEqual({ status: "ok" });
    ready = false;
    const down = await app.inject({ method: "GET", url: "/ready" });
    expectEnvelope(down, 503, "/ready");
    expect(down.headers["retry-after"]).toBe("5");
    expect(down.body).not.toContain("ECONNREFUSED");
    await app.close();
  });

  it("GET /metrics counts served requests by route pattern and status, with default metrics", async () => {
    await t().app.inject({ method: "GET", url: "/api/v1/posts/12345" });
    await t().app.inject({ method: "GET", url: "/api/v1/posts/67890" });
    await t().app.inject({ method: "GET", url: "/no/such/path/42" });
    const response = await t().app.inject({ method: "GET", url: "/metrics" });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/plain/);
    const text = response.body;
    expect(text).toMatch(
      /http_requests_total\{method="GET",route="\/api\/v1\/posts\/:id",status_code="404"\} 2/,
    );
    expect(text).toMatch(/http_requests_total\{method="GET",route="unmatched",status_code="404"\} 1/);
    expect(text).toContain(
      'http_request_duration_seconds_bucket{le="0.001",method="GET",route="/api/v1/posts/:id"',
    );
    expect(text).not.toContain("/api/v1/posts/12345");
    expect(text).toContain("nodejs_eventloop_lag_seconds");
  });

  it("GET /metrics reads the database pool's use at each scrape", async () => {
    let stats = { max: 10, total: 3, idle: 1, waiting: 0 };
    const { app } = await buildTestApp({ poolStats: () => stats });
    const scrape = async () => (await app.inject({ method: "GET", url: "/metrics" })).body;
    const first = await scrape();
    expect(first).toContain("db_pool_max_connections 10");
    expect(first).toContain('db_pool_connections{state="idle"} 1');
    expect(first).toContain('db_pool_connections{state="in_use"} 2');
    expect(first).toContain("db_pool_waiting_requests 0");
    stats = { max: 10, total: 10, idle: 0, waiting: 7 };
    const second = await scrape();
    expect(second).toContain('db_pool_connections{state="idle"} 0');
    expect(second).toContain('db_pool_connections{state="in_use"} 10');
    expect(second).toContain("db_pool_waiting_requests 7");
    await app.close();
  });

  it("has no pool gauges without a pool (the embedded database)", async () => {
    expect((await t().app.inject({ method: "GET", url: "/metrics" })).body).not.toContain("db_pool_");
  });

  it("GET /metrics counts the post cache's hits, misses and pages, and shows its size, at each scrape", async () => {
    let stats = { hits: 30, misses: 10, pagesThroughCache: 1, pagesInFull: 1, posts: 21, bytes: 35_000 };
    const { app } = await buildTestApp({ postCache: { holds: () => false, stats: () => stats } });
    const scrape = async () => (await app.inject({ method: "GET", url: "/metrics" })).body;
    const first = await scrape();
    expect(first).toContain('post_cache_lookups_total{result="hit"} 30');
    expect(first).toContain('post_cache_lookups_total{result="miss"} 10');
    expect(first).toContain('post_cache_pages_total{read="through_cache"} 1');
    expect(first).toContain('post_cache_pages_total{read="in_full"} 1');
    expect(first).toContain("post_cache_posts 21");
    expect(first).toContain("post_cache_bytes 35000");
    stats = { hits: 90, misses: 11, pagesThroughCache: 4, pagesInFull: 1, posts: 22, bytes: 36_000 };
    const second = await scrape();
    expect(second).toContain('post_cache_lookups_total{result="hit"} 90');
    expect(second).toContain('post_cache_lookups_total{result="miss"} 11');
    expect(second).toContain('post_cache_pages_total{read="through_cache"} 4');
    expect(second).toContain("post_cache_posts 22");
    await app.close();
    expect(await (await t().app.inject({ method: "GET", url: "/metrics" })).body).not.toContain(
      "post_cache_",
    );
  });

  it("GET /metrics reads a post cache whose stats() is a method of a class with private fields", async () => {
    class Cache {
      readonly #hits = 5;
      holds(): boolean {
        return false;
      }
      stats() {
        return { hits: this.#hits, misses: 0, pagesThroughCache: 0, pagesInFull: 0, posts: 0, bytes: 0 };
      }
    }
    const { app } = await buildTestApp({ postCache: new Cache() });
    const response = await app.inject({ method: "GET", url: "/metrics" });
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain('post_cache_lookups_total{result="hit"} 5');
    await app.close();
  });

  it("serves no /metrics when metrics is false", async () => {
    const { app } = await buildTestApp({ metrics: false });
    expect((await app.inject({ method: "GET", url: "/metrics" })).statusCode).toBe(404);
    await app.close();
  });

  it("GET /openapi.json documents every route, every status, and the X-AUTH-TOKEN scheme", async () => {
    const response = await t().app.inject({ method: "GET", url: "/openapi.json" });
    expect(response.statusCode).toBe(200);
    const document = response.json();
    expect(document.openapi).toMatch(/^3\./);
    expect(document.components.securitySchemes.authToken).toStrictEqual({
      type: "apiKey",
      in: "header",
      name: "X-AUTH-TOKEN",
      description: expect.any(String),
    });
    const operations = Object.entries(document.paths as Record<string, Record<string, { responses: object }>>)
      .flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    expect(operations).toEqual(
      [
        "DELETE /api/v1/posts/{id}",
        "DELETE /api/v1/user",
        "GET /api/v1/posts",
        "GET /api/v1/posts/events",
        "GET /api/v1/posts/{id}",
        "GET /api/v1/user",
        "GET /health",
        "GET /metrics",
        "GET /ready",
        "PATCH /api/v1/posts/{id}",
        "POST /api/v1/posts",
        "POST /api/v1/user",
        "POST /api/v1/user/login",
      ].sort(),
    );
    const statuses = (method: string, path: string) =>
      Object.keys(document.paths[path][method].responses).sort();
    expect(statuses("post", "/api/v1/posts")).toEqual([
      "201",
      "400",
      "401",
      "403",
      "413",
      "415",
      "422",
      "500",
      "503",
    ]);
    expect(statuses("patch", "/api/v1/posts/{id}")).toEqual(
      ["200", "400", "401", "403", "404", "412", "413", "415", "500", "503"].sort(),
    );
    expect(statuses("delete", "/api/v1/posts/{id}")).toEqual(
      ["204", "401", "403", "404", "412", "500", "503"].sort(),
    );
    expect(statuses("get", "/api/v1/posts/{id}")).toEqual(["200", "304", "401", "404", "500", "503"]);
    expect(statuses("get", "/api/v1/posts")).toEqual(["200", "304", "400", "401", "500", "503"]);
    expect(statuses("post", "/api/v1/user/login")).toEqual(
      ["200", "400", "401", "413", "415", "429", "500", "503"].sort(),
    );
    for (const [method, path] of [
      ["post", "/api/v1/posts"],
      ["patch", "/api/v1/posts/{id}"],
      ["delete", "/api/v1/posts/{id}"],
      ["get", "/api/v1/user"],
      ["delete", "/api/v1/user"],
    ] as const) {
      expect(document.paths[path][method].security).toEqual([{ authToken: [] }]);
    }
    expect(document.paths["/api/v1/posts/{id}"].patch.responses["401"].content).toHaveProperty([
      "text/plain",
    ]);
    const post = resolve(
      document,
      document.paths["/api/v1/posts/{id}"].get.responses["200"].content["application/json"].schema,
    );
    const page = resolve(
      document,
      document.paths["/api/v1/posts"].get.responses["200"].content["application/json"].schema,
    );
    expect(Object.keys(page.properties)).toEqual(["content", "size", "nextCursor"]);
    expect(Object.keys(post.properties)).toEqual(POST_PROPERTIES);
  });

  it("GET /openapi.json documents the conditional, idempotency and search headers and parameters", async () => {
    const document = (await t().app.inject({ method: "GET", url: "/openapi.json" })).json();
    const operation = (method: string, path: string) => document.paths[path][method];
    const parameters = (method: string, path: string) =>
      (operation(method, path).parameters as { in: string; name: string }[]).map(
        (parameter) => `${parameter.in} ${parameter.name.toLowerCase()}`,
      );
    const headers = (method: string, path: string, status: string) =>
      Object.keys(operation(method, path).responses[status].headers ?? {}).map((name) => name.toLowerCase());

    expect(parameters("get", "/api/v1/posts")).toEqual([
      "query size",
      "query cursor",
      "query userid",
      "query q",
      "header if-none-match",
    ]);
    expect(parameters("get", "/api/v1/posts/{id}")).toEqual(["path id", "header if-none-match"]);
    expect(parameters("patch", "/api/v1/posts/{id}")).toEqual(["path id", "header if-match"]);
    expect(parameters("delete", "/api/v1/posts/{id}")).toEqual(["path id", "header if-match"]);
    expect(parameters("post", "/api/v1/posts")).toEqual(["header idempotency-key"]);

    expect(headers("get", "/api/v1/posts/{id}", "200")).toEqual(["etag", "cache-control"]);
    expect(headers("get", "/api/v1/posts/{id}", "304")).toEqual(["etag", "cache-control"]);
    expect(headers("get", "/api/v1/posts", "200")).toEqual(["etag", "cache-control", "link"]);
    expect(headers("get", "/api/v1/posts", "304")).toEqual(["etag", "cache-control"]);
    expect(headers("patch", "/api/v1/posts/{id}", "200")).toEqual(["etag"]);
    expect(headers("post", "/api/v1/posts", "201")).toEqual(["location", "idempotent-replayed"]);
    // No body on a 304; the error of a 412 and a 422 is the envelope.
    expect(operation("get", "/api/v1/posts/{id}").responses["304"].content).toBeUndefined();
    for (const [method, path, status] of [
      ["patch", "/api/v1/posts/{id}", "412"],
      ["delete", "/api/v1/posts/{id}", "412"],
      ["post", "/api/v1/posts", "422"],
    ] as const) {
      expect(
        resolve(document, operation(method, path).responses[status].content["application/json"].schema)
          .properties,
      ).toHaveProperty("timestamp");
    }
  });

  it("serves Swagger UI at /docs", async () => {
    const response = await t().app.inject({ method: "GET", url: "/docs/" });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/html/);
  });

  it("lets /docs load its own scripts over plain HTTP from any address: no upgrade-insecure-requests", async () => {
    const response = await t().app.inject({
      method: "GET",
      url: "/docs/",
      headers: { host: "10.0.0.7:8080" },
    });
    expect(response.statusCode).toBe(200);
    const policy = response.headers["content-security-policy"];
    expect(policy).toMatch(/script-src 'self'/);
    expect(policy).not.toMatch(/upgrade-insecure-requests/);
  });

  it("keeps upgrade-insecure-requests on /docs served over HTTPS (behind a trusted proxy)", async () => {
    const { app } = await buildTestApp({ trustProxy: true });
    try {
      const https = await app.inject({
        method: "GET",
        url: "/docs/",
        headers: { "x-forwarded-proto": "https" },
      });
      expect(https.headers["content-security-policy"]).toMatch(
        /script-src 'self'.*upgrade-insecure-requests/,
      );
      const http = await app.inject({
        method: "GET",
        url: "/docs/",
        headers: { "x-forwarded-proto": "http" },
      });
      expect(http.headers["content-security-policy"]).not.toMatch(/upgrade-insecure-requests/);
    } finally {
      await app.close();
    }
  });

  it("sets security headers on errors too, including a 401 from authentication", async () => {
    for (const headers of [{ "x-auth-token": "bad" }, {}]) {
      const response = await t().app.inject({ method: "GET", url: "/nowhere", headers });
      expect(response.statusCode).toBeGreaterThanOrEqual(400);
      expect(response.headers["x-content-type-options"]).toBe("nosniff");
    }
  });

  it("sets security headers (helmet, for an API) and no CORS headers by default", async () => {
    const response = await t().app.inject({
      method: "GET",
      url: "/api/v1/posts",
      headers: { origin: "https://app.example" },
    });
    expect(response.headers["x-content-type-options"]).toBe("nosniff");
    expect(response.headers["x-frame-options"]).toBe("DENY");
    expect(response.headers["content-security-policy"]).toBe("default-src 'none';frame-ancestors 'none'");
    expect(response.headers["strict-transport-security"]).toMatch(/^max-age=\d+/);
    expect(response.headers["access-control-allow-origin"]).toBeUndefined();
    expect(response.headers["x-powered-by"]).toBeUndefined();
  });

  it("answers CORS for the configured origins only", async () => {
    const { app } = await buildTestApp({ corsOrigins: ["https://app.example"] });
    const allowed = await app.inject({
      method: "OPTIONS",
      url: "/api/v1/posts",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,x-auth-token,idempotency-key",
      },
    });
    expect(allowed.statusCode).toBe(204);
    expect(allowed.headers["access-control-allow-origin"]).toBe("https://app.example");
    const allowedHeaders = String(allowed.headers["access-control-allow-headers"])
      .toLowerCase()
      .split(/,\s*/);
    for (const header of ["content-type", "x-auth-token", "if-match", "if-none-match", "idempotency-key"]) {
      expect(allowedHeaders).toContain(header);
    }
    const other = await app.inject({
      method: "GET",
      url: "/api/v1/posts",
      headers: { origin: "https://evil.example" },
    });
    expect(other.headers["access-control-allow-origin"]).toBeUndefined();
    const exposed = await app.inject({
      method: "GET",
      url: "/api/v1/posts",
      headers: { origin: "https://app.example" },
    });
    expect(String(exposed.headers["access-control-expose-headers"]).split(/,\s*/)).toEqual(
      expect.arrayContaining(["Location", "Link", "Retry-After", "ETag", "Idempotent-Replayed"]),
    );
    // CORS answers OPTIONS everywhere, yet an unknown path is still 404, not 405.
    expect((await app.inject({ method: "GET", url: "/nothing/here" })).statusCode).toBe(404);
    await app.close();
  });

  it("refuses to build with a JWT secret under 32 bytes or an unknown time zone", async () => {
    await expect(buildTestApp({ jwt: { secret: "x".repeat(31), issuer: "i" } })).rejects.toThrow(RangeError);
    await expect(buildTestApp({ timeZone: "Mars/Olympus_Mons" })).rejects.toThrow(RangeError);
  });
});

/** The schema a `$ref` to `#/components/schemas/<name>` names, or `schema` itself. */
function resolve(
  document: { components: { schemas: Record<string, { properties: object }> } },
  schema: { $ref?: string; properties?: object },
): { properties: object } {
  const name = schema.$ref?.replace("#/components/schemas/", "");
  return name === undefined
    ? (schema as { properties: object })
    : (document.components.schemas[name] ?? { properties: {} });
}
