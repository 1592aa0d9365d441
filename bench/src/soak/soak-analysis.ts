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
  /**
   * Of them, answers to requests in flight while the soak stopped the service on purpose (a heap
   * snapshot stops it for seconds): a stop longer than the statement timeout fails the statements
   * it catches, and one longer than the client's timeout times the request out, as any stall
   * would. Not attributed to a restart; a 503 or a client timeout is expected there, nothing else.
   */
  readonly failuresDuringPauses: number;
  /** Non-2xx answers before the first restart: there should be none. */
  readonly failuresBeforeRestarts: number;
  readonly outages: readonly Outage[];
  /**
   * Answers that must never happen: any 5xx but 503, network errors, client timeouts (except, for
   * requests caught by a pause, 503 and client timeouts).
   */
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
  /** Keyed creates sent twice: how many, and how many retries named another post than the first 201. */
  readonly retries: { readonly sent: number; readonly bothCreated: number; readonly otherPost: number };
}

/**
 * After the load, how long the soak's open stream of change events may take to reach the last
 * event its reader of JSON pages read, before the feed check calls it stalled.
 */
export const CATCH_UP_MS = 30_000;

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

/** A span (epoch milliseconds) when the soak stopped the service on purpose. */
export interface Pause {
  readonly from: number;
  readonly to: number;
}

/**
 * Reads the records of a run with PostgreSQL restarted at the given times (in order) and the
 * service stopped on purpose during `pauses`.
 */
export function analyzeLoad(
  records: readonly RequestRecord[],
  restarts: readonly RestartTimes[],
  pauses: readonly Pause[] = [],
): LoadAnalysis {
  const startedAt = extent(records.map((record) => record.sentAt)).min;
  const endedAt = extent(records.map((record) => record.doneAt)).max;
  const byOperation: Record<Operation, number> = {
    list: 0,
    search: 0,
    read: 0,
    create: 0,
    retry: 0,
    patch: 0,
  };
  const byStatus: Record<string, number> = {};
  for (const record of records) {
    byOperation[record.op]++;
    byStatus[record.status] = (byStatus[record.status] ?? 0) + 1;
  }
  const inPause = (record: RequestRecord) =>
    pauses.some((pause) => record.sentAt <= pause.to && record.doneAt >= pause.from);
  const allFailed = records.filter((record) => !isSuccess(record.status));
  const failed = allFailed.filter((record) => !inPause(record));

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

  // A retry must name the post its first attempt created, when both were answered 201.
  const firstCreated = new Map<string, number>();
  for (const record of records)
    if (
      record.op === "create" &&
      record.key !== undefined &&
      record.status === 201 &&
      record.postId !== undefined
    )
      firstCreated.set(record.key, record.postId);
  const retried = records.filter((record) => record.op === "retry");
  const bothCreated = retried.filter(
    (record) => record.status === 201 && record.key !== undefined && firstCreated.has(record.key),
  );

  return {
    requests: records.length,
    durationMs: endedAt - startedAt,
    perSecond: records.length / ((endedAt - startedAt) / 1000),
    byOperation,
    byStatus,
    failures: allFailed.length,
    failuresDuringPauses: allFailed.length - failed.length,
    failuresBeforeRestarts: failed.filter((record) => record.doneAt < firstStop).length,
    outages,
    unexpected:
      failed.filter((record) => record.status !== 503).length +
      allFailed.filter((record) => inPause(record) && record.status !== 503 && record.status !== -1).length,
    latency: {
      before: latencyOf(records.filter((record) => record.doneAt < firstStop)),
      during: latencyOf(records.filter(inOutage)),
      after: latencyOf(records.filter((record) => record.doneAt >= firstStop && !inOutage(record))),
    },
    acknowledgedIds: records.flatMap((record) =>
      (record.op === "create" || record.op === "retry") &&
      record.status === 201 &&
      record.postId !== undefined
        ? [record.postId]
        : [],
    ),
    acknowledgedUpdates,
    retries: {
      sent: retried.length,
      bothCreated: bothCreated.length,
      otherPost: bothCreated.filter((record) => firstCreated.get(record.key as string) !== record.postId)
        .length,
    },
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
 * The samples after the first `share` of their time span: what is judged once the service is
 * warm. A heap snapshot taken at the end of the warm-up raises RSS for good (the allocator keeps
 * what the snapshot's native work freed), so RSS too is judged from there on.
 */
export function afterWarmUp<T extends { readonly at: number }>(samples: readonly T[], share: number): T[] {
  const from = samples.reduce((first, sample) => Math.min(first, sample.at), Number.POSITIVE_INFINITY);
  const to = samples.reduce((last, sample) => Math.max(last, sample.at), Number.NEGATIVE_INFINITY);
  return samples.filter((sample) => sample.at - from >= (to - from) * share);
}

/**
 * One reading of the service's heap after forced full collections, with what its bounded caches
 * said they held at that moment (from /metrics): the part of the heap a cache filling up explains.
 */
export interface CollectedHeapReading {
  readonly at: number;
  /** V8 heap in use right after full collections. */
  readonly heapBytes: number;
  /** What the bounded caches reported holding (the post cache's `post_cache_bytes`). */
  readonly cacheBytes: number;
}

/** How much the heap may grow, net of the caches, before the verdict calls it a leak. */
export interface LeakBounds {
  /** Growth under this many bytes is never a leak: what bounded structures and requests in flight move. */
  readonly bytes: number;
  /** Nor growth under this share of the baseline. */
  readonly share: number;
  /** Readings of the first part of the run left out while the service warms up (0 to 1), at least. */
  readonly warmUpShare: number;
  /**
   * Once the cache has reached its bound, readings are left out until this many times the time it
   * took to get there (see {@link judgedFrom}).
   */
  readonly settleFactor: number;
  /** The cache counts as full from its first reading at this share of its bound. */
  readonly fullShare: number;
  /** Fewer readings than this after the warm-up: inconclusive. */
  readonly minReadings: number;
}

/**
 * The bounds the soak judges by: 3 MiB or 10%, whichever is larger, after a fifth of the run or
 * twice the time the post cache took to fill, whichever is later.
 */
export const LEAK_BOUNDS: LeakBounds = {
  bytes: 3 * 2 ** 20,
  share: 0.1,
  warmUpShare: 0.2,
  settleFactor: 2,
  fullShare: 0.97,
  minReadings: 8,
};

/** Where the judged part of a run starts, and which rule put it there. */
export interface JudgedWindow {
  /** Epoch milliseconds of the first reading that counts. */
  readonly from: number;
  /** When the cache first reached its bound (epoch ms); undefined when it never did. */
  readonly cacheFullAt: number | undefined;
  readonly rule: "share of the run" | "cache settled";
}

/**
 * Where the judged readings of a run start: after `warmUpShare` of the run (code compiled, pools
 * open), and, when the cache reached its bound (`cacheBoundBytes`), not before `settleFactor`
 * times the time it took to get there.
 *
 * Why: the cache's bytes are an estimate. While it fills, the estimate tracks what it holds (the
 * runs measured it a little above), so subtracting it is fair. Once it is at its bound the estimate
 * stays still, but what the entries really retain goes on changing until the cache has turned
 * over: entries cached early are replaced by entries that lived through the steady state (their
 * strings flattened, their JSON memoized), and V8's hash tables grow in steps while the number of
 * entries stays the same. The hour of 2026-11-24 saw the net heap rise by 3.4 MiB for the ten
 * minutes after the bound was reached at minute 12, then stay flat for 40 minutes. A cache that
 * took T to fill replaces about its whole content in the next T at the same load, so from 2T on
 * every entry was made in the steady state and the estimate's error is constant: growth from then
 * on is not the cache's. Decided from the run's own readings, not from a length chosen to pass.
 */
export function judgedFrom(
  sorted: readonly CollectedHeapReading[],
  bounds: LeakBounds = LEAK_BOUNDS,
  cacheBoundBytes?: number,
): JudgedWindow {
  const start = sorted[0]?.at ?? 0;
  const end = sorted[sorted.length - 1]?.at ?? 0;
  const byShare = start + (end - start) * bounds.warmUpShare;
  const full =
    cacheBoundBytes === undefined || cacheBoundBytes <= 0
      ? undefined
      : sorted.find((reading) => reading.cacheBytes >= cacheBoundBytes * bounds.fullShare);
  if (full === undefined) return { from: byShare, cacheFullAt: undefined, rule: "share of the run" };
  const settled = start + (full.at - start) * bounds.settleFactor;
  return settled > byShare
    ? { from: settled, cacheFullAt: full.at, rule: "cache settled" }
    : { from: byShare, cacheFullAt: full.at, rule: "share of the run" };
}

/** What {@link leakVerdict} found. */
export interface LeakAnalysis {
  readonly verdict: "pass" | "fail" | "inconclusive";
  /** Readings judged (after the warm-up). */
  readonly readings: number;
  /** Median of the heap net of caches over the first quarter of the judged readings. */
  readonly baselineBytes: number;
  /** The same over their last quarter. */
  readonly finalBytes: number;
  /** `finalBytes - baselineBytes`. */
  readonly growthBytes: number;
  /** The growth the bounds allow from this baseline. */
  readonly allowedBytes: number;
  /** Least-squares slope of the net heap over the judged readings, in bytes per hour (for the report). */
  readonly slopeBytesPerHour: number;
  /** The caches' bytes at the first and the last judged reading. */
  readonly cacheFirstBytes: number;
  readonly cacheLastBytes: number;
  /** Where the judged readings start and why. */
  readonly window: JudgedWindow;
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

/**
 * Whether the heap grew for any reason but its bounded caches. Each reading is the heap after
 * forced full collections minus what the caches hold at that moment; after the warm-up
 * ({@link judgedFrom}: given the cache's bound, it also waits for the cache to settle), the
 * median of the last quarter of readings is compared with the median of the first quarter (medians,
 * so that one reading taken while requests were in flight moves nothing). More growth than the
 * bounds allow fails. A leak therefore fails once it has added `bounds.bytes` (or the share) over
 * the judged part of the run, which is what sets how long a run must be to see a given rate.
 */
export function leakVerdict(
  all: readonly CollectedHeapReading[],
  bounds: LeakBounds = LEAK_BOUNDS,
  cacheBoundBytes?: number,
): LeakAnalysis {
  const sorted = all.filter((reading) => reading.heapBytes > 0).sort((a, b) => a.at - b.at);
  const from = sorted[0]?.at ?? 0;
  const window = judgedFrom(sorted, bounds, cacheBoundBytes);
  const judged = sorted.filter((reading) => reading.at >= window.from);
  const net = judged.map((reading) => reading.heapBytes - reading.cacheBytes);
  const quarter = Math.max(1, Math.floor(net.length / 4));
  const baselineBytes = net.length === 0 ? Number.NaN : median(net.slice(0, quarter));
  const finalBytes = net.length === 0 ? Number.NaN : median(net.slice(-quarter));
  const growthBytes = finalBytes - baselineBytes;
  const allowedBytes = Math.max(bounds.bytes, bounds.share * baselineBytes);
  // Least squares, for the report only: the verdict rests on the medians.
  const hours = judged.map((reading) => (reading.at - from) / 3_600_000);
  const meanHour = hours.reduce((sum, hour) => sum + hour, 0) / Math.max(1, hours.length);
  const meanNet = net.reduce((sum, bytes) => sum + bytes, 0) / Math.max(1, net.length);
  let covariance = 0;
  let variance = 0;
  hours.forEach((hour, index) => {
    covariance += (hour - meanHour) * ((net[index] as number) - meanNet);
    variance += (hour - meanHour) ** 2;
  });
  return {
    verdict:
      judged.length < bounds.minReadings ? "inconclusive" : growthBytes > allowedBytes ? "fail" : "pass",
    readings: judged.length,
    baselineBytes,
    finalBytes,
    growthBytes,
    allowedBytes,
    slopeBytesPerHour: variance === 0 ? 0 : covariance / variance,
    cacheFirstBytes: judged[0]?.cacheBytes ?? 0,
    cacheLastBytes: judged[judged.length - 1]?.cacheBytes ?? 0,
    window,
  };
}
