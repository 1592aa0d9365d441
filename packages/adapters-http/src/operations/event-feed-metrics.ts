import { Counter, Gauge, type Registry } from "prom-client";
import type { EventFeedStats } from "../events/event-feed-stats.js";

/**
 * The change feed's metrics, read when scraped: `event_streams_open`,
 * `event_stream_buffered_bytes`, `event_streams_stalled_total` and
 * `event_log_readers{state="active"|"waiting"}`.
 */
export function registerEventFeedMetrics(registry: Registry, stats: () => EventFeedStats): void {
  new Gauge({
    name: "event_streams_open",
    help: "Change-feed streams open",
    registers: [registry],
    collect() {
      this.set(stats().streams);
    },
  });
  new Gauge({
    name: "event_stream_buffered_bytes",
    help: "Bytes written to change-feed streams that their sockets have not taken yet, summed per stream: a batch shared by replays counts once for each, so it may exceed the memory held",
    registers: [registry],
    collect() {
      this.set(stats().bufferedBytes);
    },
  });
  let stalledGiven = 0;
  new Counter({
    name: "event_streams_stalled_total",
    help: "Change-feed streams disconnected because their client stopped reading",
    registers: [registry],
    collect() {
      const { stalled } = stats();
      this.inc(stalled - stalledGiven);
      stalledGiven = stalled;
    },
  });
  new Gauge({
    name: "event_log_readers",
    help: "Replays and JSON pages of the change feed holding a turn at reading the log (active) or waiting for one",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      const { readersActive, readersWaiting } = stats();
      this.set({ state: "active" }, readersActive);
      this.set({ state: "waiting" }, readersWaiting);
    },
  });
  // A gauge of the readers waiting misses a wait shorter than the time between two scrapes;
  // this count keeps every one.
  let waitedGiven = 0;
  new Counter({
    name: "event_log_reader_waits_total",
    help: "Replays and JSON pages of the change feed that had to wait for a turn at reading the log",
    registers: [registry],
    collect() {
      const { readersWaited } = stats();
      this.inc(readersWaited - waitedGiven);
      waitedGiven = readersWaited;
    },
  });
}
