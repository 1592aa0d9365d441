import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { percentile, Samples } from "../measure/stats.js";

/** What to send: one request template whose `setupRequest` picks fresh ids every time. */
export interface Workload {
  readonly request: autocannon.Request;
  /**
   * When present, wrk drives the workload instead of autocannon ({@link driveWithWrk}): Lua for
   * wrk's script API that defines `request()`, sending what `request` sends.
   */
  readonly wrkRequest?: string;
  readonly connections: number;
  /** Requests per second from all connections together; as fast as possible when absent. */
  readonly overallRate?: number;
  /** The status every answer should have (a conditional GET's 304); any 2xx when absent. */
  readonly expectedStatus?: number;
}

/** What one stretch of load against one server saw. */
export interface Slice {
  /** Response times in milliseconds, unrounded, in arrival order. */
  readonly latencies: Samples;
  readonly seconds: number;
  /** Responses with another status than expected: outside 2xx, or not the workload's `expectedStatus`. */
  readonly non2xx: number;
  /** Connection errors and timeouts. */
  readonly errors: number;
  /** Status code → count, for the statuses not expected. */
  readonly badStatuses: Readonly<Record<string, number>>;
}

/** Slices of the same workload against the same server, taken together. */
export interface LoadResult {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly responses: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly badStatuses: Readonly<Record<string, number>>;
}

/**
 * Drives `workload` against `baseUrl` for `seconds`: with wrk when it has a `wrkRequest` (and
 * no rate), else with autocannon in this process (the harness), never in the server's.
 * Latencies are kept unrounded (autocannon's own histogram rounds to whole milliseconds), those
 * of non-2xx responses included.
 */
export function drive(baseUrl: string, workload: Workload, seconds: number): Promise<Slice> {
  if (workload.wrkRequest !== undefined && workload.overallRate === undefined) {
    return driveWithWrk(baseUrl, workload.wrkRequest, workload.connections, seconds);
  }
  const latencies = new Samples();
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: baseUrl,
        connections: workload.connections,
        duration: seconds,
        requests: [workload.request],
        ...(workload.overallRate === undefined ? {} : { overallRate: workload.overallRate }),
        timeout: 10,
      },
      (error: unknown, result: autocannon.Result) => {
        if (error) {
          reject(error);
          return;
        }
        const expected = (status: string) =>
          workload.expectedStatus === undefined
            ? status.startsWith("2")
            : status === String(workload.expectedStatus);
        const badStatuses: Record<string, number> = {};
        let unexpected = 0;
        for (const [status, stat] of Object.entries(result.statusCodeStats ?? {})) {
          if (expected(status)) continue;
          badStatuses[status] = stat.count ?? 0;
          unexpected += stat.count ?? 0;
        }
        resolve({
          latencies,
          seconds: result.duration,
          non2xx: unexpected,
          errors: result.errors,
          badStatuses,
        });
      },
    );
    instance.on("response", (_client, _status, _bytes, responseTime) => latencies.add(responseTime));
  });
}

/** The first line of what {@link WRK_DONE} writes, then one line per latency seen: µs and count. */
const WRK_SUMMARY = "posts-bench-wrk";

/**
 * wrk's `done`: its totals (duration in µs, responses, errors of connect, read, write, status
 * ≥ 400 and timeout) and its whole latency histogram, which it keeps per microsecond, so that
 * slices are pooled into percentiles as autocannon's are, not averaged from wrk's own.
 */
const WRK_DONE = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("${WRK_SUMMARY} %d %d %d %d %d %d %d\\n", summary.duration, summary.requests,
    e.connect, e.read, e.write, e.status, e.timeout))
  for i = 1, #latency do
    local value, count = latency(i)
    io.write(string.format("%d %d\\n", value, count))
  end
end
`;

/**
 * Drives `request` (Lua defining wrk's `request()`) against `baseUrl` from `connections`
 * connections for `seconds` (whole seconds, as wrk counts them) with wrk, one thread, in a
 * process of its own. wrk's CPU per request is a fraction of autocannon's, which shares the two
 * cores with the servers and so dilutes every ratio of a closed loop; wrk is written in C and
 * reads no more of an answer than its length. Needs the `wrk` command (Debian package `wrk`).
 */
export async function driveWithWrk(
  baseUrl: string,
  request: string,
  connections: number,
  seconds: number,
): Promise<Slice> {
  const dir = mkdtempSync(join(tmpdir(), "posts-bench-wrk-"));
  try {
    const script = join(dir, "load.lua");
    writeFileSync(script, `math.randomseed(${Math.floor(Math.random() * 2 ** 31)})\n${request}\n${WRK_DONE}`);
    const args = ["-t1", `-c${connections}`, `-d${Math.max(1, Math.round(seconds))}s`, "--timeout", "10s"];
    const output = await new Promise<string>((resolve, reject) => {
      execFile(
        "wrk",
        [...args, "-s", script, baseUrl],
        { maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => {
          if (error !== null) {
            const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
            reject(
              missing
                ? new Error("wrk is not installed (Debian: apt-get install wrk)")
                : new Error(`wrk failed: ${stderr}`),
            );
            return;
          }
          resolve(stdout);
        },
      );
    });
    const lines = output.split("\n");
    const at = lines.findIndex((line) => line.startsWith(`${WRK_SUMMARY} `));
    if (at === -1) throw new Error(`wrk wrote no summary:\n${output}`);
    const [durationUs, responses, connect, read, write, status, timeout] = (lines[at] as string)
      .split(" ")
      .slice(1)
      .map(Number) as [number, number, number, number, number, number, number];
    const histogram = new Map<number, number>();
    for (const line of lines.slice(at + 1)) {
      if (line === "") continue;
      const [micros, count] = line.split(" ").map(Number) as [number, number];
      histogram.set(micros, count);
    }
    const latencies = measuredLatencies(histogram, durationUs, responses, connections);
    // Each response is one latency, but one of 10 s or more, which wrk counts as a timeout.
    if (latencies.length > responses || latencies.length < responses - timeout) {
      throw new Error(`wrk's histogram holds ${latencies.length} latencies for ${responses} responses`);
    }
    return {
      latencies,
      seconds: durationUs / 1e6,
      // wrk counts answers of 400 and above as status errors; the workloads it drives expect 200.
      non2xx: status,
      errors: connect + read + write + timeout,
      badStatuses: status === 0 ? {} : { "400 and above": status },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The latencies wrk measured, from the histogram its `done` sees (µs → count). Before `done`,
 * wrk 4 "corrects" the histogram for coordinated omission: with `e` the time a connection
 * took per request on average (its integer arithmetic, below), every latency `n` of at least
 * `2e` adds as many latencies of `n - e`, `n - 2e`, … down to above `e`, as if requests had been
 * due every `e` µs. A closed loop sends a request when the previous one is answered, so those
 * latencies were never seen; and they would make its percentiles incomparable with autocannon's.
 * A corrected count at `m > e` is the measured one plus every measured one at `m + ke`, so the
 * measured count is the corrected one less the corrected one at `m + e`.
 */
function measuredLatencies(
  corrected: ReadonlyMap<number, number>,
  durationUs: number,
  responses: number,
  connections: number,
): Samples {
  const perConnection = Math.floor(responses / connections);
  const e = perConnection > 0 ? Math.floor(durationUs / perConnection) : Number.POSITIVE_INFINITY;
  const latencies = new Samples();
  for (const [micros, count] of corrected) {
    const measured = micros > e ? count - (corrected.get(micros + e) ?? 0) : count;
    for (let i = 0; i < measured; i++) latencies.add(micros / 1000);
  }
  return latencies;
}

/** Throughput over the slices' total time, and percentiles over all their responses. */
export function combine(slices: readonly Slice[]): LoadResult {
  const all = new Samples();
  const badStatuses: Record<string, number> = {};
  for (const slice of slices) {
    all.addAll(slice.latencies);
    for (const [status, count] of Object.entries(slice.badStatuses)) {
      badStatuses[status] = (badStatuses[status] ?? 0) + count;
    }
  }
  const sorted = all.sorted();
  const seconds = slices.reduce((sum, s) => sum + s.seconds, 0);
  return {
    requestsPerSecond: sorted.length / seconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    responses: sorted.length,
    non2xx: slices.reduce((sum, s) => sum + s.non2xx, 0),
    errors: slices.reduce((sum, s) => sum + s.errors, 0),
    badStatuses,
  };
}
