import type { FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import type { EventFeedStats } from "../events/event-feed-stats.js";
import type { ByteBudgetStats } from "../http/byte-budget.js";
import type {
  DatabasePoolStats,
  DatabasePrimaryStats,
  PostCacheStats,
  StandbyReadStats,
} from "../http-app-options.js";
import { MetricsRouteSchema } from "../schemas/operational-route-schemas.js";
import { registerEventFeedMetrics } from "./event-feed-metrics.js";
import { RequestMetrics } from "./request-metrics.js";
import { registerStandbyMetrics } from "./standby-metrics.js";

/** The route label of a request no route matched: one value, however many URLs are probed. */
const UNMATCHED = "unmatched";

// Each app's registry, for `buildMetricsApp` to serve on a listener of its own.
const REGISTRIES = new WeakMap<FastifyInstance, Registry>();

/** The handler of GET /metrics: `registry` in Prometheus's text format, wherever it is served. */
export function scrapeHandler(registry: Registry) {
  return async (_request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> =>
    reply.type(registry.contentType).send(await registry.metrics());
}

/** The registry the metrics plugin gave `app`, or undefined when it has none. */
export function metricsRegistryOf(app: FastifyInstance): Registry | undefined {
  return REGISTRIES.get(app);
}

/** What the metrics plugin is given. */
export interface MetricsOptions {
  /** Whether GET /metrics is a route of this app; when not, `buildMetricsApp` serves it. */
  readonly route: boolean;
  readonly poolStats?: () => DatabasePoolStats;
  readonly partitionIdsLeft?: (() => number | undefined) | undefined;
  readonly postCacheStats?: (() => PostCacheStats) | undefined;
  readonly standbyStats?: (() => StandbyReadStats) | undefined;
  readonly eventFeedStats?: (() => EventFeedStats) | undefined;
  readonly primaryStats?: (() => DatabasePrimaryStats) | undefined;
  /** Writes (POST, PUT, PATCH, DELETE) answered 503 because the database was unavailable, so far. */
  readonly writesRefused?: (() => number) | undefined;
  readonly largePostStats?: (() => ByteBudgetStats) | undefined;
  /** The budget of large request bodies; absent: no gauges for it. */
  readonly largeBodyStats?: (() => ByteBudgetStats) | undefined;
}

const plugin: FastifyPluginCallback<MetricsOptions> = (app, options, done) => {
  // A registry per app, so several apps in one process (tests) never share or clash.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (options.poolStats !== undefined) registerPoolGauges(registry, options.poolStats);
  if (options.partitionIdsLeft !== undefined) registerPartitionGauge(registry, options.partitionIdsLeft);
  if (options.postCacheStats !== undefined) registerPostCacheMetrics(registry, options.postCacheStats);
  if (options.standbyStats !== undefined) registerStandbyMetrics(registry, options.standbyStats);
  if (options.eventFeedStats !== undefined) registerEventFeedMetrics(registry, options.eventFeedStats);
  registerFailoverMetrics(registry, options.primaryStats, options.writesRefused);
  if (options.largePostStats !== undefined) registerLargePostGauges(registry, options.largePostStats);
  if (options.largeBodyStats !== undefined) registerLargeBodyGauges(registry, options.largeBodyStats);
  const requests = new RequestMetrics();
  for (const metric of requests.metrics()) registry.registerMetric(metric);

  app.addHook("onResponse", (request, reply, next) => {
    // The route pattern (`/api/v1/posts/:id`), never the raw URL, bounds the label values.
    requests.observe(
      request.method,
      request.routeOptions.url ?? UNMATCHED,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    next();
  });

  REGISTRIES.set(app, registry);
  if (options.route) {
    app.get("/metrics", { schema: MetricsRouteSchema }, scrapeHandler(registry));
  }
  done();
};

/**
 * A counter of `counts`, totals since the process started kept where they happen, one series per
 * key under `label`: each scrape adds what was counted since the one before.
 */
function countsByLabel(
  registry: Registry,
  counter: {
    readonly name: string;
    readonly help: string;
    readonly label: string;
    readonly counts: () => Readonly<Record<string, number>>;
  },
): void {
  const given = new Map<string, number>();
  new Counter({
    name: counter.name,
    help: counter.help,
    labelNames: [counter.label],
    registers: [registry],
    collect() {
      for (const [key, total] of Object.entries(counter.counts())) {
        this.inc({ [counter.label]: key }, total - (given.get(key) ?? 0));
        given.set(key, total);
      }
    },
  });
}

/**
 * The changes of primary the pool has seen, the statements it sent again, the writes it resolved
 * on the primary, and the writes refused while no primary answered, counted in plain numbers
 * where they happen; each scrape adds what was counted since the one before.
 */
function registerFailoverMetrics(
  registry: Registry,
  primaryStats: (() => DatabasePrimaryStats) | undefined,
  writesRefused: (() => number) | undefined,
): void {
  if (primaryStats !== undefined) {
    let given = 0;
    new Counter({
      name: "db_primary_changes_total",
      help: "Times a new database connection found another server the primary (a promotion) since the process started",
      registers: [registry],
      collect() {
        const { changes } = primaryStats();
        this.inc(changes - given);
        given = changes;
      },
    });
    countsByLabel(registry, {
      name: "db_statements_resent_total",
      help: "Statements sent again on a new connection after a failure that proved they changed nothing (DB_RETRY_WITHIN_MS), by why: no-connection, read-only (25006), uncommitted (cut short by the server's shutdown before they could commit)",
      label: "reason",
      counts: () => primaryStats().resent,
    });
    countsByLabel(registry, {
      name: "db_writes_resolved_total",
      help: "Writes whose commit a lost connection left unknown, resolved by asking the primary for their transaction and its own event rows (DB_RETRY_WITHIN_MS), by outcome: committed (answered with their rows), uncommitted (never committed there: sent again), unresolved (not told within the window: answered 503)",
      label: "outcome",
      counts: () => primaryStats().resolved,
    });
  }
  if (writesRefused !== undefined) {
    let given = 0;
    new Counter({
      name: "db_unavailable_writes_refused_total",
      help: "Writes (POST, PUT, PATCH, DELETE) answered 503 because the database did not answer or took no writes",
      registers: [registry],
      collect() {
        const refused = writesRefused();
        this.inc(refused - given);
        given = refused;
      },
    });
  }
}

/** Gauges read from the pool when scraped: nothing runs between scrapes. */
function registerPoolGauges(registry: Registry, stats: () => DatabasePoolStats): void {
  // Each metric is declared whole, as prom-client has them (here, in registerPostCacheMetrics,
  // event-feed-metrics.ts and standby-metrics.ts): its name, help and reading side by side, so
  // that one reads as /metrics shows it; they look alike without sharing a logic.
  new Gauge({
    name: "db_pool_max_connections",
    help: "Most connections the database pool opens",
    registers: [registry],
    collect() {
      this.set(stats().max);
    },
  });
  new Gauge({
    name: "db_pool_connections",
    help: "Open database connections, by state (idle, in_use)",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      const { total, idle } = stats();
      this.set({ state: "idle" }, idle);
      this.set({ state: "in_use" }, total - idle);
    },
  });
  new Gauge({
    name: "db_pool_waiting_requests",
    help: "Queries waiting for a database connection because every one is in use",
    registers: [registry],
    collect() {
      this.set(stats().waiting);
    },
  });
}

/** The ids left in the partitions of posts, read when scraped: what to alarm on. */
function registerPartitionGauge(registry: Registry, idsLeft: () => number | undefined): void {
  new Gauge({
    name: "posts_partition_ids_left",
    help: "Ids the posts' sequence may still give before the last partition of posts is full (new posts are refused with 503 past it); alarm below one partition's worth (131072)",
    registers: [registry],
    collect() {
      // Not read yet (before the task's first run): NaN, which no alarm threshold compares below.
      this.set(idsLeft() ?? Number.NaN);
    },
  });
}

/**
 * The post cache's counts, read when scraped: the repository counts in plain numbers on its hot
 * path, and each scrape adds to prom-client's counters what was counted since the one before.
 */
function registerPostCacheMetrics(registry: Registry, stats: () => PostCacheStats): void {
  /** What a counter has been given so far, and how to give it what `stats` counted since. */
  const catchUp = () => {
    const given = new Map<string, number>();
    return (counter: Counter<string>, labels: Record<string, string>, total: number) => {
      const key = JSON.stringify(labels);
      counter.inc(labels, total - (given.get(key) ?? 0));
      given.set(key, total);
    };
  };
  const lookups = catchUp();
  new Counter({
    name: "post_cache_lookups_total",
    help: "Posts listed on a page that were found cached at their version (hit) or read from the database (miss)",
    labelNames: ["result"] as const,
    registers: [registry],
    collect() {
      const { hits, misses } = stats();
      lookups(this, { result: "hit" }, hits);
      lookups(this, { result: "miss" }, misses);
    },
  });
  const pages = catchUp();
  new Counter({
    name: "post_cache_pages_total",
    help: "Pages read through the post cache (ids and versions first) or in full (recent pages mostly missed)",
    labelNames: ["read"] as const,
    registers: [registry],
    collect() {
      const { pagesThroughCache, pagesInFull } = stats();
      pages(this, { read: "through_cache" }, pagesThroughCache);
      pages(this, { read: "in_full" }, pagesInFull);
    },
  });
  new Gauge({
    name: "post_cache_posts",
    help: "Posts held in the post cache",
    registers: [registry],
    collect() {
      this.set(stats().posts);
    },
  });
  new Gauge({
    name: "post_cache_bytes",
    help: "Bytes the posts held in the post cache are estimated to take (at most its configured size)",
    registers: [registry],
    collect() {
      this.set(stats().bytes);
    },
  });
}

/** The budget of large posts' reads (docs/posts.md#large-posts), read when scraped. */
function registerLargePostGauges(registry: Registry, stats: () => ByteBudgetStats): void {
  new Gauge({
    name: "large_post_bytes_held",
    help: "Bytes of large posts' content being read and written now, within their budget",
    registers: [registry],
    collect() {
      this.set(stats().heldBytes);
    },
  });
  new Gauge({
    name: "large_post_reads_waiting",
    help: "Reads of large posts waiting for room in their budget",
    registers: [registry],
    collect() {
      this.set(stats().waiting);
    },
  });
}

/** The budget of large request bodies (docs/posts.md#large-posts), read when scraped. */
function registerLargeBodyGauges(registry: Registry, stats: () => ByteBudgetStats): void {
  new Gauge({
    name: "large_body_bytes_held",
    help: "Bytes of large request bodies being read and handled now, within their budget",
    registers: [registry],
    collect() {
      this.set(stats().heldBytes);
    },
  });
  new Gauge({
    name: "large_bodies_waiting",
    help: "Large request bodies waiting for room in their budget before they are read",
    registers: [registry],
    collect() {
      this.set(stats().waiting);
    },
  });
}

/**
 * Prometheus metrics on the app's own registry, served at GET /metrics (of this app when
 * `route`, else of `buildMetricsApp`'s): the process's default
 * metrics (CPU, memory, GC, event-loop lag) and, per method, route pattern and status, a
 * request counter `http_requests_total` and a latency histogram `http_request_duration_seconds`;
 * given `poolStats`, the database pool's `db_pool_connections{state}`, `db_pool_waiting_requests`
 * and `db_pool_max_connections`; given `partitionIdsLeft`, `posts_partition_ids_left`; given `postCacheStats`, the post cache's
 * `post_cache_lookups_total{result}`, `post_cache_pages_total{read}`, `post_cache_posts` and
 * `post_cache_bytes`; given `standbyStats`, the standbys' `db_standby_up{standby}`,
 * `db_standby_replay_lag_bytes{standby}`, `db_standby_reads_total{standby}`,
 * `db_standby_fallback_reads_total{reason}`, `db_standby_position_queries_total` and
 * `db_standby_reads_without_primary_total`; given `eventFeedStats`, the change feed's (see
 * `registerEventFeedMetrics`); given `largePostStats`, `large_post_bytes_held` and
 * `large_post_reads_waiting`; given `largeBodyStats`, `large_body_bytes_held` and
 * `large_bodies_waiting`.
 */
export const metrics = fp(plugin, { name: "posts-metrics", fastify: "5.x" });
