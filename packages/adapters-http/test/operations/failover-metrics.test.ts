import { describe, expect, it } from "vitest";
import { buildTestApp, useTestApp } from "../support/test-app.js";

class DatabaseDown extends Error {}

describe("GET /metrics across changes of primary", () => {
  const t = useTestApp();
  const scrape = async (app: Awaited<ReturnType<typeof buildTestApp>>["app"]) =>
    (await app.inject({ method: "GET", url: "/metrics" })).body;

  it("counts the changes of primary the pool saw, the statements it sent again and the writes it resolved, at each scrape", async () => {
    let changes = 0;
    let resent = { "no-connection": 0, "read-only": 0, uncommitted: 0 };
    let resolved = { committed: 0, uncommitted: 0, unresolved: 0 };
    const { app } = await buildTestApp({ primaryStats: () => ({ changes, resent, resolved }) });
    expect(await scrape(app)).toContain("db_primary_changes_total 0");
    expect(await scrape(app)).toContain('db_statements_resent_total{reason="uncommitted"} 0');
    expect(await scrape(app)).toContain('db_writes_resolved_total{outcome="committed"} 0');
    changes = 2;
    resent = { "no-connection": 5, "read-only": 1, uncommitted: 3 };
    resolved = { committed: 4, uncommitted: 2, unresolved: 1 };
    const scraped = await scrape(app);
    expect(scraped).toContain("db_primary_changes_total 2");
    expect(scraped).toContain('db_statements_resent_total{reason="no-connection"} 5');
    expect(scraped).toContain('db_statements_resent_total{reason="read-only"} 1');
    expect(scraped).toContain('db_statements_resent_total{reason="uncommitted"} 3');
    expect(scraped).toContain('db_writes_resolved_total{outcome="committed"} 4');
    expect(scraped).toContain('db_writes_resolved_total{outcome="uncommitted"} 2');
    expect(scraped).toContain('db_writes_resolved_total{outcome="unresolved"} 1');
    await app.close();
  });

  it("counts the writes answered 503 because the database was unavailable, and no read nor other failure", async () => {
    const { app, deps, aUserWithToken } = await buildTestApp({
      isUnavailable: (error) => error instanceof DatabaseDown,
    });
    const { token } = await aUserWithToken();
    deps.posts.create = async () => {
      throw new DatabaseDown("connect ECONNREFUSED");
    };
    deps.posts.findById = async () => {
      throw new DatabaseDown("connect ECONNREFUSED");
    };
    const post = () =>
      app.inject({
        method: "POST",
        url: "/api/v1/posts",
        headers: { "x-auth-token": token, "content-type": "application/json" },
        payload: { title: "t", content: "c" },
      });
    expect((await post()).statusCode).toBe(503);
    expect((await post()).statusCode).toBe(503);
    expect((await app.inject({ method: "GET", url: "/api/v1/posts/1" })).statusCode).toBe(503);
    expect(await scrape(app)).toContain("db_unavailable_writes_refused_total 2");
    deps.posts.create = async () => {
      throw new TypeError("a fault");
    };
    expect((await post()).statusCode).toBe(500);
    expect(await scrape(app)).toContain("db_unavailable_writes_refused_total 2");
    await app.close();
  });

  it("has no count of primary changes without a pool to see them", async () => {
    expect(await scrape(t().app)).not.toContain("db_primary_changes_total");
  });
});
