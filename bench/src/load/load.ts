import autocannon from "autocannon";
import { percentile, Samples } from "../measure/stats.js";

/** What to send: one request template whose `setupRequest` picks fresh ids every time. */
export interface Workload {
  readonly request: autocannon.Request;
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
 * Drives `workload` against `baseUrl` for `seconds` with autocannon, in this process (the
 * harness), never in the server's. Latencies are kept unrounded (autocannon's own histogram
 * rounds to whole milliseconds), those of non-2xx responses included.
 */
export function drive(baseUrl: string, workload: Workload, seconds: number): Promise<Slice> {
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
