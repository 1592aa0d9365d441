import type { Metric } from "prom-client";

/** Seconds; finer than prom-client's defaults at the low end, where an API's requests live. */
export const LATENCY_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** The labels of one request series. */
export interface RequestLabels {
  readonly method: string;
  readonly route: string;
  readonly status_code: string;
}

/** What the requests of one (method, route, status) added up to, in plain numbers. */
class Series {
  count = 0;
  sum = 0;
  /** Observations per bucket, not cumulative; the last one is above every bound (+Inf). */
  readonly perBucket = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);

  constructor(readonly labels: RequestLabels) {}
}

const REQUESTS = {
  name: "http_requests_total",
  help: "HTTP requests answered, by method, route pattern and status",
} as const;
const DURATIONS = {
  name: "http_request_duration_seconds",
  help: "Time from receiving a request to sending its response, by method, route pattern and status",
} as const;

/**
 * The request counter and latency histogram of the API, exposed through a prom-client
 * `Registry` as `http_requests_total` and `http_request_duration_seconds`, in the text
 * prom-client's own Counter and Histogram would print for the same observations.
 *
 * Why not those classes: a labelled `inc` or `observe` validates, copies and hashes the labels
 * on every call, a cost that is a measurable share of a whole GET. Here a request costs a Map
 * lookup and a few additions; turning the numbers into metric values happens at scrape time.
 */
export class RequestMetrics {
  readonly #series = new Map<string, Series>();

  /** Counts one answered request that took `seconds`. */
  observe(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let series = this.#series.get(key);
    if (series === undefined) {
      series = new Series({ method, route, status_code: String(status) });
      this.#series.set(key, series);
    }
    series.count += 1;
    series.sum += seconds;
    let bucket = 0;
    // A bucket holds the observations up to and including its bound (Prometheus `le`).
    while (bucket < LATENCY_BUCKETS.length && seconds > (LATENCY_BUCKETS[bucket] as number)) bucket += 1;
    series.perBucket[bucket] = (series.perBucket[bucket] as number) + 1;
  }

  /** Both metrics, for `registry.registerMetric`. */
  metrics(): readonly Metric[] {
    // prom-client's Registry reads a metric through name, get() and reset() only; its types
    // name just its own classes, hence the casts.
    const counter = {
      ...REQUESTS,
      type: "counter",
      aggregator: "sum",
      get: async () => ({
        ...counter,
        values: [...this.#series.values()].map((series) => ({ labels: series.labels, value: series.count })),
      }),
      reset: () => this.#series.clear(),
    };
    const histogram = {
      ...DURATIONS,
      type: "histogram",
      aggregator: "sum",
      get: async () => ({ ...histogram, values: [...this.#series.values()].flatMap(histogramValues) }),
      reset: () => this.#series.clear(),
    };
    return [counter as unknown as Metric, histogram as unknown as Metric];
  }
}

function histogramValues(series: Series) {
  const bucketName = `${DURATIONS.name}_bucket`;
  let cumulative = 0;
  const buckets = LATENCY_BUCKETS.map((le, i) => {
    cumulative += series.perBucket[i] as number;
    return { metricName: bucketName, labels: { le, ...series.labels }, value: cumulative };
  });
  return [
    ...buckets,
    { metricName: bucketName, labels: { le: "+Inf", ...series.labels }, value: series.count },
    { metricName: `${DURATIONS.name}_sum`, labels: series.labels, value: series.sum },
    { metricName: `${DURATIONS.name}_count`, labels: series.labels, value: series.count },
  ];
}
