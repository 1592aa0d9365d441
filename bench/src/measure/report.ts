import type { LoadResult } from "../load/load.js";
import { closedLoopName } from "../load/scenarios.js";
import { median, percentile } from "./stats.js";

/** One measured round of one scenario against one server. */
export interface Round extends LoadResult {
  /**
   * CPU time the server process used per response (all its threads). Unlike req/s it hardly
   * depends on what else the machine is doing, so it shows the cost of the code even on a busy
   * machine.
   */
  readonly cpuMsPerRequest: number;
  /**
   * CPU time the PostgreSQL backends serving the server's connections used per response: the
   * database's share of the work, which the server's own CPU does not show (a statement parsed
   * and planned each time costs there). NaN when not measured (the embedded database, or a
   * PostgreSQL server on another machine).
   */
  readonly databaseCpuMsPerRequest: number;
  readonly rssMaxBytes: number;
  /** Login scenario: the server's event-loop delay p99 over the round, when it exposes one. */
  readonly eventLoopP99Ms?: number | undefined;
  /** Login scenario: the concurrent GET traffic. */
  readonly probe?: LoadResult | undefined;
}

/** The rounds of one scenario, per server. */
export interface ScenarioRuns {
  readonly name: string;
  readonly description: string;
  readonly service: readonly Round[];
  /** Empty in the embedded run. */
  readonly baseline: readonly Round[];
  /** The Express server's; empty when it did not run (embedded run, self-check, --skip-express). */
  readonly express: readonly Round[];
  /**
   * Set when the service was measured against itself: the label of its reference workload,
   * whose rounds are in `baseline` (and `express` is empty).
   */
  readonly reference?: string;
  /** The status every answer of the service's workload should have; any 2xx when absent. */
  readonly expectedStatus?: number;
}

/** A server the service is compared with: the limit of the stack, or common practice. */
export type Reference = "baseline" | "express";

/** What is compared between two rounds. */
export type Metric = (round: Round) => number;

export const REQUESTS_PER_SECOND: Metric = (r) => r.requestsPerSecond;
export const P50: Metric = (r) => r.p50Ms;
export const P99: Metric = (r) => r.p99Ms;
export const SERVER_CPU: Metric = (r) => r.cpuMsPerRequest;
export const DATABASE_CPU: Metric = (r) => r.databaseCpuMsPerRequest;
/** The server's CPU per request and its PostgreSQL backends' together: the whole cost on the machine. */
export const TOTAL_CPU: Metric = (r) => r.cpuMsPerRequest + r.databaseCpuMsPerRequest;

/** Medians (and worst cases) of one server's rounds of one scenario. */
export interface Summary {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuMsPerRequest: number;
  readonly databaseCpuMsPerRequest: number;
  /** Non-2xx responses plus connection errors, over all rounds. */
  readonly failures: number;
  readonly badStatuses: Readonly<Record<string, number>>;
  readonly rssMaxBytes: number;
  readonly eventLoopP99Ms?: number | undefined;
  readonly probeP99Ms?: number | undefined;
  readonly perRound: readonly number[];
}

export function summarize(rounds: readonly Round[]): Summary {
  const badStatuses: Record<string, number> = {};
  for (const round of rounds) {
    for (const [status, count] of Object.entries(round.badStatuses)) {
      badStatuses[status] = (badStatuses[status] ?? 0) + count;
    }
  }
  const eventLoop = rounds.flatMap((r) => (r.eventLoopP99Ms === undefined ? [] : [r.eventLoopP99Ms]));
  const probe = rounds.flatMap((r) => (r.probe === undefined ? [] : [r.probe.p99Ms]));
  return {
    requestsPerSecond: median(rounds.map((r) => r.requestsPerSecond)),
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: median(rounds.map((r) => r.p99Ms)),
    cpuMsPerRequest: median(rounds.map((r) => r.cpuMsPerRequest)),
    databaseCpuMsPerRequest: median(rounds.map((r) => r.databaseCpuMsPerRequest)),
    failures: rounds.reduce((sum, r) => sum + r.non2xx + r.errors, 0),
    badStatuses,
    rssMaxBytes: Math.max(...rounds.map((r) => r.rssMaxBytes)),
    eventLoopP99Ms: eventLoop.length > 0 ? median(eventLoop) : undefined,
    probeP99Ms: probe.length > 0 ? median(probe) : undefined,
    perRound: rounds.map((r) => r.requestsPerSecond),
  };
}

/**
 * Service/`against` for `metric`, per round. A round's measurements were taken in alternating
 * slices under the same conditions, so they are compared with each other rather than with the
 * other server's rounds, which ran under other conditions; the median of these is the ratio.
 */
export function pairedRatios(run: ScenarioRuns, metric: Metric, against: Reference = "baseline"): number[] {
  const reference = run[against];
  return run.service.flatMap((s, i) => {
    const r = reference[i];
    return r === undefined ? [] : [metric(s) / metric(r)];
  });
}

/** One target, judged. */
export interface Verdict {
  readonly target: string;
  readonly measured: string;
  readonly pass: boolean;
}

const MB = 1024 * 1024;
/**
 * Least req/s against the baseline (the limit of this stack), or, for a scenario measured against
 * itself, against its reference workload (bench/README.md#targets).
 */
const VS_BASELINE: ReadonlyArray<readonly [string, number]> = [
  ["get-one", 1.2],
  ["get-304", 1],
  ["list-first", 1.5],
  ["list-deep", 1.5],
  ["list-user", 1.5],
  ["list-cold", 0.9],
  ["create", 1],
  ["create-key", 0.85],
  ["patch", 1],
];
/** Most server + PostgreSQL CPU per request against the baseline's. */
const TOTAL_CPU_VS_BASELINE: Readonly<Record<string, number>> = {
  "list-first": 0.6,
  "list-deep": 0.6,
  "list-user": 0.6,
};
/** Least req/s against the Express server (common practice). */
const VS_EXPRESS: ReadonlyArray<readonly [string, number]> = [
  ["get-one", 3],
  ["create", 3],
];
/**
 * `--closed-loop`: least req/s against the baseline per number of connections. At 32 the
 * service's CPU per request is about half the baseline's, so a rate below 1.6x is time spent
 * waiting; at 64 no less, as more reads in flight only give each statement more to gather.
 */
const CLOSED_LOOP_VS_BASELINE: ReadonlyArray<readonly [number, number]> = [
  [32, 1.6],
  [64, 1.6],
];
/** `--closed-loop` at one connection: most p50 against the baseline's (nothing to gather, nothing to wait for). */
const CLOSED_LOOP_ALONE_P50 = 1;
/** Scenarios whose p99 must stay under {@link SEARCH_P99_MS} (at 16 connections). */
const SEARCHES = ["search-rare", "search-common", "search-korean"];
const SEARCH_P99_MS = 50;
const DEEP_VS_FIRST = 0.95;
const P99_RATIO = 1.2;
const RSS_LIMIT = 200 * MB;
const LOGIN_MIN_RPS = 30;
const EVENT_LOOP_LIMIT_MS = 100;

const fixed = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");

/**
 * `value` judged against `line`, to `digits` decimals or as many more as it takes not to print
 * the line itself for a value beside it: 0.947 against 0.95 reads "0.947x FAIL", not "0.95x FAIL".
 * (A line of at most `digits` decimals is a multiple of the rounding step, so a value on one side
 * never rounds past it, only onto it.)
 */
function beside(value: number, line: number, digits = 2): string {
  let shown = digits;
  while (shown < 6 && value !== line && Number(value.toFixed(shown)) === line) shown++;
  return fixed(value, shown);
}

/** Judges the targets; without a baseline (embedded run) only those that need none. */
export function judge(runs: readonly ScenarioRuns[]): Verdict[] {
  const verdicts: Verdict[] = [];
  const by = new Map(runs.map((r) => [r.name, r]));
  const s = (name: string) => {
    const run = by.get(name);
    return run === undefined ? undefined : summarize(run.service);
  };

  const atLeast = (targets: ReadonlyArray<readonly [string, number]>, against: Reference) => {
    for (const [name, min] of targets) {
      const run = by.get(name);
      if (run === undefined || run[against].length === 0) continue;
      const ratio = median(pairedRatios(run, REQUESTS_PER_SECOND, against));
      verdicts.push({
        target: `${name}: req/s >= ${min}x ${referenceName(run, against)}`,
        measured: `${beside(ratio, min)}x`,
        pass: ratio >= min,
      });
    }
  };
  atLeast(VS_BASELINE, "baseline");
  for (const [name, max] of Object.entries(TOTAL_CPU_VS_BASELINE)) {
    const run = by.get(name);
    if (run === undefined || run.baseline.length === 0) continue;
    const ratio = median(pairedRatios(run, TOTAL_CPU));
    verdicts.push({
      target: `${name}: server + PostgreSQL CPU per request <= ${max}x baseline`,
      measured: Number.isFinite(ratio)
        ? `${beside(ratio, max)}x (server ${fixed(median(pairedRatios(run, SERVER_CPU)))}x, PostgreSQL ${fixed(median(pairedRatios(run, DATABASE_CPU)))}x)`
        : "n/a (PostgreSQL CPU not measured)",
      pass: ratio <= max,
    });
  }
  atLeast(VS_EXPRESS, "express");
  atLeast(
    CLOSED_LOOP_VS_BASELINE.map(([connections, min]) => [closedLoopName(connections), min] as const),
    "baseline",
  );
  const alone = by.get(closedLoopName(1));
  if (alone !== undefined && alone.baseline.length > 0) {
    const ratio = median(pairedRatios(alone, P50));
    verdicts.push({
      target: `${alone.name}: p50 <= ${CLOSED_LOOP_ALONE_P50}x baseline p50`,
      measured: `${beside(ratio, CLOSED_LOOP_ALONE_P50)}x`,
      pass: ratio <= CLOSED_LOOP_ALONE_P50,
    });
  }
  const depth = by.get("list-depth");
  const deep = s("list-deep");
  const first = s("list-first");
  if (depth !== undefined && depth.baseline.length > 0) {
    const ratio = median(pairedRatios(depth, REQUESTS_PER_SECOND));
    verdicts.push({
      target: `list-deep: req/s >= ${DEEP_VS_FIRST}x the service's list-first (list-depth, paired)`,
      measured: `${beside(ratio, DEEP_VS_FIRST)}x`,
      pass: ratio >= DEEP_VS_FIRST,
    });
  } else if (deep !== undefined && first !== undefined) {
    // Without list-depth: the two scenarios' medians, measured apart.
    const ratio = deep.requestsPerSecond / first.requestsPerSecond;
    // The baseline runs the same SQL: its own deep/first ratio shows what is not the service's doing.
    const baselineDeep = by.get("list-deep")?.baseline ?? [];
    const baselineFirst = by.get("list-first")?.baseline ?? [];
    const context =
      baselineDeep.length > 0 && baselineFirst.length > 0
        ? ` (baseline: ${fixed(summarize(baselineDeep).requestsPerSecond / summarize(baselineFirst).requestsPerSecond)}x)`
        : "";
    verdicts.push({
      target: `list-deep: req/s >= ${DEEP_VS_FIRST}x the service's list-first`,
      measured: `${beside(ratio, DEEP_VS_FIRST)}x${context}`,
      pass: ratio >= DEEP_VS_FIRST,
    });
  }
  for (const name of SEARCHES) {
    const search = s(name);
    if (search === undefined) continue;
    verdicts.push({
      target: `${name}: p99 < ${SEARCH_P99_MS} ms`,
      measured: `${beside(search.p99Ms, SEARCH_P99_MS)} ms`,
      pass: search.p99Ms < SEARCH_P99_MS,
    });
  }
  for (const run of runs) {
    const service = summarize(run.service);
    const statuses = Object.entries(service.badStatuses)
      .map(([status, count]) => `${count}×${status}`)
      .join(", ");
    verdicts.push({
      target: `${run.name}: zero non-${run.expectedStatus ?? "2xx"} and errors`,
      measured:
        service.failures === 0 ? "0" : `${service.failures}${statuses === "" ? "" : ` (${statuses})`}`,
      pass: service.failures === 0,
    });
  }
  for (const run of runs) {
    // Against the baseline server only: a reference workload of the service is no limit to hold to.
    if (run.baseline.length === 0 || run.reference !== undefined) continue;
    const ratio = median(pairedRatios(run, P99));
    verdicts.push({
      target: `${run.name}: p99 <= ${P99_RATIO}x baseline p99`,
      measured: `${beside(ratio, P99_RATIO)}x`,
      pass: ratio <= P99_RATIO,
    });
  }
  const loadRuns = runs.filter((r) => r.name !== "login");
  if (loadRuns.length > 0) {
    const rss = Math.max(...loadRuns.map((r) => summarize(r.service).rssMaxBytes));
    verdicts.push({
      target: `RSS <= ${RSS_LIMIT / MB} MB under load (max over scenarios)`,
      measured: `${beside(rss / MB, RSS_LIMIT / MB, 0)} MB`,
      pass: rss <= RSS_LIMIT,
    });
  }
  const login = s("login");
  if (login !== undefined) {
    verdicts.push({
      target: `login: >= ${LOGIN_MIN_RPS} req/s`,
      measured: `${fixed(login.requestsPerSecond, 1)} req/s`,
      pass: login.requestsPerSecond >= LOGIN_MIN_RPS,
    });
    // The server's own figure when it publishes one; otherwise the latency of the concurrent
    // GETs, which can only be larger than the event-loop delay they suffered.
    const delay = login.eventLoopP99Ms ?? login.probeP99Ms ?? Number.NaN;
    const source = login.eventLoopP99Ms === undefined ? "concurrent GET p99" : "nodejs_eventloop_lag_p99";
    verdicts.push({
      target: `login: event-loop delay p99 < ${EVENT_LOOP_LIMIT_MS} ms during logins`,
      measured: `${fixed(delay, 1)} ms (${source}; concurrent GET p99 ${fixed(login.probeP99Ms ?? Number.NaN, 1)} ms)`,
      pass: delay < EVENT_LOOP_LIMIT_MS,
    });
  }
  return verdicts;
}

/** What the report calls the rounds `run[against]`. */
function referenceName(run: ScenarioRuns, against: Reference): string {
  return against === "baseline" ? (run.reference ?? "baseline") : against;
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/**
 * The results as Markdown tables (readable in a terminal, pasteable into RESULTS.md): per
 * scenario each server's medians, then the service against each reference server.
 */
export function render(runs: readonly ScenarioRuns[], serviceName: string): string {
  const rows: string[][] = [];
  const references: readonly Reference[] = ["baseline", "express"];
  for (const run of runs) {
    const service = summarize(run.service);
    const row = (name: string, x: Summary) => [
      run.name,
      name,
      fixed(x.requestsPerSecond, 0),
      fixed(x.p50Ms),
      fixed(x.p99Ms),
      fixed(x.cpuMsPerRequest, 3),
      fixed(x.databaseCpuMsPerRequest, 3),
      String(x.failures),
      fixed(x.rssMaxBytes / MB, 0),
      x.perRound.map((v) => fixed(v, 0)).join(" / "),
    ];
    rows.push(row(serviceName, service));
    for (const against of references) {
      if (run[against].length > 0) rows.push(row(referenceName(run, against), summarize(run[against])));
    }
    for (const against of references) {
      if (run[against].length === 0) continue;
      const reference = summarize(run[against]);
      const rps = pairedRatios(run, REQUESTS_PER_SECOND, against);
      rows.push([
        run.name,
        `**vs ${referenceName(run, against)}**`,
        `**${fixed(median(rps))}**`,
        fixed(service.p50Ms / reference.p50Ms),
        `**${fixed(median(pairedRatios(run, P99, against)))}**`,
        fixed(median(pairedRatios(run, SERVER_CPU, against))),
        fixed(median(pairedRatios(run, DATABASE_CPU, against))),
        "",
        fixed(service.rssMaxBytes / reference.rssMaxBytes),
        rps.map((v) => fixed(v)).join(" / "),
      ]);
    }
  }
  const parts = [
    table(
      [
        "scenario",
        "server",
        "req/s",
        "p50 ms",
        "p99 ms",
        "CPU ms/req",
        "PG CPU ms/req",
        "non-2xx",
        "RSS MB",
        "per round (req/s or ratio)",
      ],
      rows,
    ),
  ];
  const login = runs.find((r) => r.name === "login");
  if (login !== undefined) {
    const loginRows = [
      [serviceName, summarize(login.service)] as const,
      ...references.flatMap((against) =>
        login[against].length > 0 ? [[against, summarize(login[against])] as const] : [],
      ),
    ];
    parts.push(
      table(
        ["login round", "logins/s", "event-loop delay p99 ms", "concurrent GET p99 ms"],
        loginRows.map(([name, x]) => [
          name,
          fixed(x.requestsPerSecond, 1),
          fixed(x.eventLoopP99Ms ?? Number.NaN, 1),
          fixed(x.probeP99Ms ?? Number.NaN, 1),
        ]),
      ),
    );
  }
  return parts.join("\n\n");
}

export function renderVerdicts(verdicts: readonly Verdict[]): string {
  return table(
    ["target", "measured", ""],
    verdicts.map((v) => [v.target, v.measured, v.pass ? "PASS" : "**FAIL**"]),
  );
}

/** The latency of one search page of the search-only bench (see `measureSearchPages`). */
export interface SearchPageTiming {
  readonly kind: string;
  readonly page: "first" | "next" | "deep";
  readonly ms: number;
  readonly posts: number;
  readonly status: number;
}

/** Most milliseconds any search page may take on the full table. */
const SEARCH_PAGE_MAX_MS = 300;
/** Most median milliseconds of the pages of terms of three characters or more. */
const SEARCH_PAGE_MEDIAN_MS = 100;

/**
 * The search-only bench as Markdown: per class of term and kind of page, how many pages, their
 * latency p50/p90/p99/max and the share that held fewer than 20 posts; then the targets.
 */
export function renderSearchPages(timings: readonly SearchPageTiming[]): string {
  const row = (label: string, page: string, of: readonly SearchPageTiming[]) => {
    const sorted = Float64Array.from(of.map((t) => t.ms)).sort();
    const short = of.filter((t) => t.posts < 20).length;
    return [
      label,
      page,
      String(of.length),
      ...[50, 90, 99, 100].map((p) => fixed(percentile(sorted, p), 1)),
      `${Math.round((100 * short) / Math.max(1, of.length))} %`,
    ];
  };
  const kinds = [...new Set(timings.map((t) => t.kind))].sort();
  const rows: string[][] = [];
  for (const kind of kinds) {
    for (const page of ["first", "next", "deep"] as const) {
      const of = timings.filter((t) => t.kind === kind && t.page === page);
      if (of.length > 0) rows.push(row(kind, page, of));
    }
  }
  rows.push(row("**all**", "all", timings));
  const longTerms = timings.filter((t) => !t.kind.includes("1–2 chars"));
  rows.push(row("**terms of ≥3 characters**", "all", longTerms));
  const failed = timings.filter((t) => t.status !== 200).length;
  const max = Math.max(...timings.map((t) => t.ms));
  const longMedian = percentile(Float64Array.from(longTerms.map((t) => t.ms)).sort(), 50);
  const verdicts: Verdict[] = [
    { target: "every answer 200", measured: `${failed} not 200`, pass: failed === 0 },
    {
      target: `every search page ≤ ${SEARCH_PAGE_MAX_MS} ms`,
      measured: `max ${fixed(max, 1)} ms`,
      pass: max <= SEARCH_PAGE_MAX_MS,
    },
    {
      target: `median page of a term of ≥3 characters ≤ ${SEARCH_PAGE_MEDIAN_MS} ms`,
      measured: `${fixed(longMedian, 1)} ms`,
      pass: longMedian <= SEARCH_PAGE_MEDIAN_MS,
    },
  ];
  return `${table(["terms", "page", "pages", "p50 ms", "p90 ms", "p99 ms", "max ms", "short pages"], rows)}\n\n${renderVerdicts(verdicts)}`;
}

/** How long one term took to its first twenty matches or the definite end (see `measureTimeTo20`). */
export interface TimeTo20 {
  readonly kind: string;
  readonly term: string;
  /** Pages asked for, following `nextCursor`. */
  readonly pages: number;
  /** Milliseconds from the first request to the last answer. */
  readonly ms: number;
  /** Posts the pages held, at most one page's worth past twenty. */
  readonly matches: number;
  readonly firstMs: number;
  /** The slowest page after the first (0 when there was none). */
  readonly slowestLaterMs: number;
  /** The last page's status: anything but 200 ended the walk. */
  readonly status: number;
  /** Given up after the most pages or time the bench follows a term. */
  readonly gaveUp: boolean;
}

/** Most pages a term may need to its first twenty matches or the end. */
const TO_20_MAX_PAGES = 3;
/** Most milliseconds a term may take to its first twenty matches or the end, all pages together. */
const TO_20_MAX_MS = 300;

/**
 * The time to twenty matches as Markdown: per class of term, how many terms, the most pages one
 * needed, the median and worst total time, the worst first page and the worst later page, and
 * how many terms missed the target (at most 3 pages and 300 ms to twenty matches or the end);
 * then the worst terms by name, and the verdict.
 */
export function renderTimeTo20(results: readonly TimeTo20[]): string {
  const missed = (r: TimeTo20) =>
    r.status !== 200 || r.gaveUp || r.pages > TO_20_MAX_PAGES || r.ms > TO_20_MAX_MS;
  const kinds = [...new Set(results.map((r) => r.kind))].sort();
  const rows = kinds.map((kind) => {
    const of = results.filter((r) => r.kind === kind);
    const totals = Float64Array.from(of.map((r) => r.ms)).sort();
    return [
      kind,
      String(of.length),
      String(Math.max(...of.map((r) => r.pages))) + (of.some((r) => r.gaveUp) ? " (given up)" : ""),
      fixed(percentile(totals, 50), 0),
      fixed(percentile(totals, 100), 0),
      fixed(Math.max(...of.map((r) => r.firstMs)), 0),
      fixed(Math.max(...of.map((r) => r.slowestLaterMs)), 0),
      String(of.filter(missed).length),
    ];
  });
  const past = results.filter(missed);
  const worst = [...past]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 10)
    .map(
      (r) =>
        `\`${r.term}\` (${r.kind}): ${r.pages} pages, ${fixed(r.ms, 0)} ms, ${r.matches} matches, status ${r.status}`,
    );
  const verdicts: Verdict[] = [
    {
      target: `every term's first 20 matches or the end within ${TO_20_MAX_PAGES} pages and ${TO_20_MAX_MS} ms`,
      measured: `${past.length} of ${results.length} terms past it`,
      pass: past.length === 0,
    },
  ];
  return [
    table(
      [
        "terms",
        "how many",
        "most pages",
        "total p50 ms",
        "total max ms",
        "first page max ms",
        "later page max ms",
        "past the target",
      ],
      rows,
    ),
    worst.length === 0
      ? ""
      : `\nThe slowest terms past the target:\n\n${worst.map((line) => `- ${line}`).join("\n")}\n`,
    renderVerdicts(verdicts),
  ].join("\n");
}
