import { Counter, Gauge, type Registry } from "prom-client";
import type { StandbyReadStats } from "../http-app-options.js";

/**
 * The standbys' state, lag and reads, read when scraped: the reads count in plain numbers on
 * their hot path, and each scrape adds to prom-client's counters what was counted since the
 * one before.
 */
export function registerStandbyMetrics(registry: Registry, stats: () => StandbyReadStats): void {
  const given = new Map<string, number>();
  const catchUp = (name: string, counter: Counter<string>, labels: Record<string, string>, total: number) => {
    const key = `${name}${JSON.stringify(labels)}`;
    counter.inc(labels, total - (given.get(key) ?? 0));
    given.set(key, total);
  };
  new Gauge({
    name: "db_standby_up",
    help: "Whether a hot standby is in the rotation for reads (1) or out of it until it answers again (0)",
    labelNames: ["standby"] as const,
    registers: [registry],
    collect() {
      for (const standby of stats().standbys) this.set({ standby: standby.label }, standby.up ? 1 : 0);
    },
  });
  new Gauge({
    name: "db_standby_replay_lag_bytes",
    help: "Bytes of WAL between the primary's last reported position and a standby's last reported replay position",
    labelNames: ["standby"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const standby of stats().standbys) {
        if (standby.replayLagBytes !== undefined)
          this.set({ standby: standby.label }, standby.replayLagBytes);
      }
    },
  });
  new Counter({
    name: "db_standby_reads_total",
    help: "Reads a hot standby answered",
    labelNames: ["standby"] as const,
    registers: [registry],
    collect() {
      for (const standby of stats().standbys)
        catchUp("reads", this, { standby: standby.label }, standby.reads);
    },
  });
  new Counter({
    name: "db_standby_fallback_reads_total",
    help: "Reads a standby could have answered that the primary answered, by reason",
    labelNames: ["reason"] as const,
    registers: [registry],
    collect() {
      for (const [reason, count] of Object.entries(stats().fallbacks))
        catchUp("fallbacks", this, { reason }, count);
    },
  });
  new Counter({
    name: "db_standby_position_queries_total",
    help: "Statements that asked the primary for its WAL position, each shared by the reads that arrived before it",
    registers: [registry],
    collect() {
      catchUp("positions", this, {}, stats().positionQueries);
    },
  });
  new Counter({
    name: "db_standby_reads_without_primary_total",
    help: "Reads a standby answered as of its last replayed change while the primary did not answer",
    registers: [registry],
    collect() {
      catchUp("without", this, {}, stats().readsWithoutPrimary);
    },
  });
}
