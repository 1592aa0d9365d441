import type { StandbyReadStats } from "@posts/adapters-http";
import { describe, expect, it } from "vitest";
import { buildTestApp, useTestApp } from "../support/test-app.js";

describe("GET /metrics with hot standbys", () => {
  const t = useTestApp();

  it("shows each standby's state, lag and reads, and the reads the primary answered instead, at each scrape", async () => {
    let stats: StandbyReadStats = {
      standbys: [
        { label: "10.0.0.2:5432/posts", up: true, replayLagBytes: 0, reads: 40 },
        { label: "10.0.0.3:5432/posts", up: true, replayLagBytes: 8192, reads: 2 },
      ],
      fallbacks: { no_standby: 0, not_caught_up: 3, recovery_conflict: 1 },
      readsWithoutPrimary: 0,
      positionQueries: 20,
    };
    const { app } = await buildTestApp({ standbyStats: () => stats });
    const scrape = async () => (await app.inject({ method: "GET", url: "/metrics" })).body;
    const first = await scrape();
    expect(first).toContain('db_standby_up{standby="10.0.0.2:5432/posts"} 1');
    expect(first).toContain('db_standby_replay_lag_bytes{standby="10.0.0.3:5432/posts"} 8192');
    expect(first).toContain('db_standby_reads_total{standby="10.0.0.2:5432/posts"} 40');
    expect(first).toContain('db_standby_fallback_reads_total{reason="not_caught_up"} 3');
    expect(first).toContain('db_standby_fallback_reads_total{reason="recovery_conflict"} 1');
    expect(first).toContain("db_standby_reads_without_primary_total 0");
    expect(first).toContain("db_standby_position_queries_total 20");

    stats = {
      standbys: [
        { label: "10.0.0.2:5432/posts", up: true, replayLagBytes: 0, reads: 45 },
        { label: "10.0.0.3:5432/posts", up: false, replayLagBytes: undefined, reads: 2 },
      ],
      fallbacks: { no_standby: 0, not_caught_up: 3, recovery_conflict: 1, standby_unavailable: 1 },
      readsWithoutPrimary: 4,
      positionQueries: 26,
    };
    const second = await scrape();
    expect(second).toContain('db_standby_up{standby="10.0.0.3:5432/posts"} 0');
    expect(second).not.toContain('db_standby_replay_lag_bytes{standby="10.0.0.3:5432/posts"}');
    expect(second).toContain('db_standby_reads_total{standby="10.0.0.2:5432/posts"} 45');
    expect(second).toContain('db_standby_fallback_reads_total{reason="standby_unavailable"} 1');
    expect(second).toContain("db_standby_reads_without_primary_total 4");
    expect(second).toContain("db_standby_position_queries_total 26");
    await app.close();
  });

  it("has no standby metrics without standbys", async () => {
    expect((await t().app.inject({ method: "GET", url: "/metrics" })).body).not.toContain("db_standby_");
  });
});
