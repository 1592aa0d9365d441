import { extent, percentile } from "../measure/stats.js";
import type { Operation, RequestRecord } from "./soak-load.js";

/** When the soak did what to the PostgreSQL server (epoch milliseconds). */
export interface RestartTimes {
  /** `pg_ctlcluster stop` was started. */
  readonly stopAt: number;
  /** `pg_ctlcluster stop` returned: the server is down. */
  readonly stoppedAt: number;
  /** `pg_ctlcluster start` was started. */
  readonly startAt: number;
  /** `pg_ctlcluster start` returned: the server accepts connections again. */
  readonly startedAt: number;
}

/** One reading of a memory figure of the service (resident set size, V8 heap in use). */
export interface MemorySample {
  readonly at: number;
  readonly bytes: number;
}

/** Latencies of one phase of the run, in milliseconds. */
export interface PhaseLatency {
  readonly requests: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** What the clients saw around one restart: the failures from its stop to the next stop. */
export interface Outage {
  readonly restart: RestartTimes;
  /** Non-2xx answers attributed to this restart. */
  readonly failures: number;
  /** First to last of them; undefined when there was none. */
  readonly window:
    | {
        readonly durationMs: number;
        /** From the stop command to the first failure. */
        readonly firstAfterStopMs: number;
        /**
         * From `pg_ctlcluster start` returning to the last failure: how long the service took to
         * recover (negative: it had recovered before the command returned).
         */
        readonly lastAfterStartMs: number;
        /** 2xx answers to requests sent after the last failure, up to the next stop. */
        readonly successesAfter: number;
      }
    | undefined;
}

/** What the request records say. */
export interface LoadAnalysis {
  readonly requests: number;
  readonly durationMs: number;
  readonly perSecond: number;
  readonly byOperation: Readonly<Record<Operation, number>>;
  /** Count of each status; 0 is a network error, -1 a client timeout. */
  readonly byStatus: Readonly<Record<string, number>>;
  /** The answers that were not 2xx. */
  readonly failures: number;
  /** Non-2xx answers before the first restart: there should be none. */
  readonly failuresBeforeRestarts: number;
  readonly outages: readonly Outage[];
  /** Answers that must never happen: any 5xx but 503, network errors, client timeouts. */
  readonly unexpected: number;
  readonly latency: {
    /** Requests answered before the first stop. */
    readonly before: PhaseLatency;
    /** Requests sent between a stop and the end of its outage (its last failure or the restart). */
    readonly during: PhaseLatency;
    /** Every other request after the first stop. */
    readonly after: PhaseLatency;
  };
  /** Every post a 201 acknowledged. */
  readonly acknowledgedIds: readonly number[];
  /** For each patched post, the latest updatedAt a 200 acknowledged (UTC, no zone). */
  readonly acknowledgedUpdates: ReadonlyMap<number, string>;
}

const isSuccess = (status: number) => status >= 200 && status < 300;

function latencyOf(records: readonly RequestRecord[]): PhaseLatency {
  const sorted = Float64Array.from(records.map((record) => record.doneAt - record.sentAt)).sort();
  return {
    requests: records.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.length === 0 ? Number.NaN : (sorted[sorted.length - 1] as number),
  };
}

/** Reads the records of a run with PostgreSQL restarted at the given times (in order). */
export function analyzeLoad(
  records: readonly RequestRecord[],
  restarts: readonly RestartTimes[],
): LoadAnalysis {
  const startedAt = extent(records.map((record) => record.sentAt)).min;
  const endedAt = extent(records.map((record) => record.doneAt)).max;
  const byOperation: Record<Operation, number> = { list: 0, read: 0, create: 0, patch: 0 };
  const byStatus: Record<string, number> = {};
  for (const record of records) {
    byOperation[record.op]++;
    byStatus[record.status] = (byStatus[record.status] ?? 0) + 1;
  }
  const failed = records.filter((record) => !isSuccess(record.status));

  const outages = restarts.map((restart, index): Outage => {
    const until = restarts[index + 1]?.stopAt ?? Number.POSITIVE_INFINITY;
    const mine = failed.filter((record) => record.doneAt >= restart.stopAt && record.doneAt < until);
    if (mine.length === 0) return { restart, failures: 0, window: undefined };
    const { min: firstAt, max: lastAt } = extent(mine.map((record) => record.doneAt));
    return {
      restart,
      failures: mine.length,
      window: {
        durationMs: lastAt - firstAt,
        firstAfterStopMs: firstAt - restart.stopAt,
        lastAfterStartMs: lastAt - restart.startedAt,
        successesAfter: records.filter(
          (record) => record.sentAt > lastAt && record.sentAt < until && isSuccess(record.status),
        ).length,
      },
    };
  });
  // An outage lasts from its stop until the server is back and the last failure is answered.
  const outageSpans = outages.map((outage) => ({
    from: outage.restart.stopAt,
    to: Math.max(
      outage.restart.startedAt,
      outage.window === undefined ? 0 : outage.restart.startedAt + outage.window.lastAfterStartMs,
    ),
  }));
  const firstStop = restarts[0]?.stopAt ?? Number.POSITIVE_INFINITY;
  const inOutage = (record: RequestRecord) =>
    outageSpans.some((span) => record.sentAt >= span.from && record.sentAt <= span.to);

  const acknowledgedUpdates = new Map<number, string>();
  for (const record of records) {
    if (record.op !== "patch" || record.updatedAt === undefined || record.postId === undefined) continue;
    const previous = acknowledgedUpdates.get(record.postId);
    if (previous === undefined || record.updatedAt > previous)
      acknowledgedUpdates.set(record.postId, record.updatedAt);
  }

  return {
    requests: records.length,
    durationMs: endedAt - startedAt,
    perSecond: records.length / ((endedAt - startedAt) / 1000),
    byOperation,
    byStatus,
    failures: failed.length,
    failuresBeforeRestarts: failed.filter((record) => record.doneAt < firstStop).length,
    outages,
    unexpected: failed.filter((record) => record.status !== 503).length,
    latency: {
      before: latencyOf(records.filter((record) => record.doneAt < firstStop)),
      during: latencyOf(records.filter(inOutage)),
      after: latencyOf(records.filter((record) => record.doneAt >= firstStop && !inOutage(record))),
    },
    acknowledgedIds: records.flatMap((record) =>
      record.op === "create" && record.status === 201 && record.postId !== undefined ? [record.postId] : [],
    ),
    acknowledgedUpdates,
  };
}

/** How one memory series of the service moved, by quarters of the sampling time. */
export interface MemoryTrend {
  readonly samples: number;
  readonly firstQuarterMaxBytes: number;
  readonly lastQuarterMaxBytes: number;
  /** Last quarter's max over the first quarter's: about 1 when memory is flat. */
  readonly ratio: number;
  /** The lowest sample of the first and of the last quarter. */
  readonly firstQuarterMinBytes: number;
  readonly lastQuarterMinBytes: number;
  readonly minBytes: number;
  readonly maxBytes: number;
}

/**
 * Splits the samples into quarters of the sampling time and compares the first with the last.
 * Samples of 0 bytes (the process was gone, or did not answer) are left out.
 */
export function memoryTrend(all: readonly MemorySample[]): MemoryTrend {
  const samples = all.filter((sample) => sample.bytes > 0);
  const from = samples[0]?.at ?? 0;
  const span = (samples[samples.length - 1]?.at ?? 0) - from;
  const part = (parts: number, index: number) =>
    samples
      .filter((sample) => Math.min(parts - 1, Math.floor(((sample.at - from) / span) * parts)) === index)
      .map((sample) => sample.bytes);
  const [first, last] = [part(4, 0), part(4, 3)];
  const bytes = samples.map((sample) => sample.bytes);
  return {
    samples: samples.length,
    firstQuarterMaxBytes: Math.max(...first),
    lastQuarterMaxBytes: Math.max(...last),
    ratio: Math.max(...last) / Math.max(...first),
    firstQuarterMinBytes: Math.min(...first),
    lastQuarterMinBytes: Math.min(...last),
    minBytes: Math.min(...bytes),
    maxBytes: Math.max(...bytes),
  };
}

/**
 * The heap readings taken just after a full collection, found as drops of more than 30% from
 * one sample to the next: what the heap holds once garbage is gone. Their trend is what a leak
 * changes; the sawtooth between them is not.
 */
export function afterFullCollections(heap: readonly MemorySample[]): MemorySample[] {
  const sorted = heap.filter((sample) => sample.bytes > 0).sort((a, b) => a.at - b.at);
  return sorted.filter((sample, index) => index > 0 && sample.bytes < 0.7 * (sorted[index - 1]?.bytes ?? 0));
}
