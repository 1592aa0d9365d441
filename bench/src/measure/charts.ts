/**
 * The bench's results as SVG charts, drawn from the same raw JSON the run keeps in
 * bench/results/: for a load run, each scenario's req/s and p99 per server (the medians the
 * Markdown table prints); for `--search-only`, the latency of the search pages per class of term
 * and kind of page; for `--curve`, a load run's chart of the service on each table size.
 */
import type { TopLevelSpec } from "vega-lite";
import { svgOf } from "../chart/vega-svg.js";
import type { Options } from "../options.js";
import {
  pairedRatios,
  REQUESTS_PER_SECOND,
  type Reference,
  type Round,
  type ScenarioRuns,
  type SearchPageTiming,
  summarize,
  type TimeTo20,
} from "./report.js";
import { median } from "./stats.js";

/** What a load run keeps in bench/results/<run>.json (see `publish`). */
export interface LoadResults {
  readonly heading: string;
  /** Absent from the files of runs before the charts: `serviceNameOf` then derives it. */
  readonly serviceName?: string;
  readonly date?: string;
  readonly options: Partial<Options>;
  readonly node: string;
  readonly runs: readonly ScenarioRuns[];
  /** The search terms followed to their first twenty matches before the scenarios; absent from earlier runs. */
  readonly timeTo20?: readonly TimeTo20[];
}

/** What `--search-only` keeps in bench/results/<run>.json (see `keepSearchPages`). */
export interface SearchResults {
  readonly heading: string;
  readonly date?: string;
  readonly options: Partial<Options>;
  readonly node: string;
  readonly searchPages: readonly SearchPageTiming[];
  /** Absent from runs kept before the bench followed terms to twenty matches. */
  readonly timeTo20?: readonly TimeTo20[];
}

/** One scenario of a `--curve` run: the service's rounds on each table, round i of both paired. */
export interface CurveScenarioRuns {
  readonly name: string;
  readonly description: string;
  readonly small: readonly Round[];
  readonly large: readonly Round[];
  /**
   * The baseline's rounds on each table, round i in the same round as the service's: what the
   * same statements cost more on the larger table. Absent from runs kept before the curve measured it.
   */
  readonly baseline?: { readonly small: readonly Round[]; readonly large: readonly Round[] };
}

/** A table size of a `--curve` run, and the name of the service measured on it. */
export interface CurveSize {
  readonly server: string;
  readonly posts: number;
}

/** What `--curve` keeps in bench/results/<run>.json (see `runCurve`). */
export interface CurveResults {
  readonly heading: string;
  readonly date?: string;
  readonly options: Partial<Options>;
  readonly node: string;
  readonly sizes: { readonly small: CurveSize; readonly large: CurveSize };
  readonly runs: readonly CurveScenarioRuns[];
  /** The search terms of each size followed to their first twenty matches; absent from earlier runs. */
  readonly timeTo20?: { readonly small: readonly TimeTo20[]; readonly large: readonly TimeTo20[] };
}

export type BenchResults = LoadResults | SearchResults | CurveResults;

/** The name the run gave the service's rows: the self-check measures a second baseline instead. */
export function serviceNameOf(results: LoadResults): string {
  return results.serviceName ?? (results.options.selfCheck === true ? "baseline-2" : "service");
}

/** What the chart of a run calls the rounds `run[against]`, as the Markdown table does. */
function referenceName(run: ScenarioRuns, against: Reference): string {
  return against === "baseline" ? (run.reference ?? "baseline") : against;
}

/** One bar: a server's median of one metric in one scenario. */
export interface Bar {
  readonly scenario: string;
  readonly server: string;
  readonly metric: string;
  readonly value: number;
}

export const REQUESTS_PER_SECOND_TITLE = "requests per second (higher is better)";
export const P99_TITLE = "p99 latency, ms (lower is better)";

/** The bars of a load run: per scenario, per server that ran it, its median req/s and p99. */
export function loadBars(runs: readonly ScenarioRuns[], serviceName: string): Bar[] {
  return runs.flatMap((run) => {
    const servers: [string, ReturnType<typeof summarize>][] = [[serviceName, summarize(run.service)]];
    for (const against of ["baseline", "express"] as const) {
      if (run[against].length > 0) servers.push([referenceName(run, against), summarize(run[against])]);
    }
    return servers.flatMap(([server, summary]) => [
      { scenario: run.name, server, metric: REQUESTS_PER_SECOND_TITLE, value: summary.requestsPerSecond },
      { scenario: run.name, server, metric: P99_TITLE, value: summary.p99Ms },
    ]);
  });
}

/**
 * What a row of the load chart is headed with: the scenario's name, then the service's req/s
 * against each server it ran beside (the median of the per-round ratios, as in the Markdown table).
 */
export function scenarioHeader(run: ScenarioRuns): string[] {
  const ratios = (["baseline", "express"] as const).flatMap((against) =>
    run[against].length === 0
      ? []
      : [
          `${median(pairedRatios(run, REQUESTS_PER_SECOND, against)).toFixed(2)}× ${referenceName(run, against)}`,
        ],
  );
  return [run.name, ...ratios];
}

/**
 * Vega-Lite warns that the rows' independent scales union one field from the bars' and the labels'
 * data: both are the same facet of the same data, so the sizes it assumes are right.
 */
const FACET_UNION_WARNING = "Detected faceted independent scales that union domain";

/** Service blue, the baseline orange, Express green; the service's own reference workloads paler blues. */
const SERVER_COLORS = ["#4c78a8", "#f58518", "#54a24b"];
const REFERENCE_COLORS = ["#9ecae9", "#72b7b2", "#b279a2", "#bab0ac"];

/**
 * The load run's chart: one row per scenario, req/s on the left and p99 on the right, a bar per
 * server labelled with its value. Each cell has its own scale, since a login and a GET differ by
 * two orders of magnitude and a shared axis would flatten the one or clip the other. `posts` says
 * what the servers ran on.
 */
export async function loadChartSvg(
  results: LoadResults,
  title: string,
  posts = `${results.options.posts?.toLocaleString("en") ?? "?"} posts`,
): Promise<string> {
  const serviceName = serviceNameOf(results);
  const bars = loadBars(results.runs, serviceName).filter((bar) => Number.isFinite(bar.value));
  const servers = [...new Set(bars.map((bar) => bar.server))];
  const main = [serviceName, "baseline", "express"].filter((name) => servers.includes(name));
  const others = servers.filter((name) => !main.includes(name));
  const domain = [...main, ...others];
  const range = [
    ...main.map((name) => SERVER_COLORS[[serviceName, "baseline", "express"].indexOf(name)] ?? "#888"),
    ...others.map((_, i) => REFERENCE_COLORS[i % REFERENCE_COLORS.length] ?? "#888"),
  ];
  const options = results.options;
  const headers = Object.fromEntries(results.runs.map((run) => [run.name, scenarioHeader(run)]));
  const spec: TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: {
      text: title,
      subtitle: [
        `${options.rounds ?? "?"} round(s) of ${options.duration ?? "?"} s per scenario, ` +
          `${options.connections ?? "?"} connections, ${posts}; ` +
          `medians over rounds · node ${results.node}`,
        "Under each scenario: the service's req/s against each other server (median of per-round ratios).",
        "Each cell has its own scale: compare the bars of a row, not the rows.",
      ],
      anchor: "start",
    },
    background: "white",
    data: { values: bars },
    facet: {
      row: {
        field: "scenario",
        type: "nominal",
        sort: results.runs.map((run) => run.name),
        header: {
          title: null,
          labelAngle: 0,
          labelAlign: "left",
          labelFontSize: 11,
          labelExpr: `${JSON.stringify(headers)}[datum.value]`,
        },
      },
      column: {
        field: "metric",
        type: "nominal",
        sort: [REQUESTS_PER_SECOND_TITLE, P99_TITLE],
        header: { title: null, labelFontSize: 12 },
      },
    },
    spec: {
      width: 320,
      height: { step: 14 },
      encoding: {
        y: { field: "server", type: "nominal", sort: domain, axis: null },
        x: { field: "value", type: "quantitative", title: null, axis: { tickCount: 4, grid: true } },
      },
      layer: [
        {
          name: "bars",
          mark: { type: "bar" },
          encoding: {
            color: {
              field: "server",
              type: "nominal",
              scale: { domain, range },
              legend: { title: "server", orient: "top", labelLimit: 300, columns: 3 },
            },
          },
        },
        {
          mark: { type: "text", align: "left", dx: 3, fontSize: 10 },
          encoding: { text: { field: "value", type: "quantitative", format: ",.4~r" } },
        },
      ],
    },
    resolve: { scale: { x: "independent", y: "independent" } },
  };
  return svgOf(spec, [FACET_UNION_WARNING]);
}

/** The search pages' latency: per class of term and kind of page, min–max, quartiles and median. */
export async function searchChartSvg(results: SearchResults, title: string): Promise<string> {
  const values = results.searchPages.map((timing) => ({
    terms: timing.kind,
    page: timing.page,
    ms: Math.max(timing.ms, 0.1),
  }));
  const classes = [...new Set(values.map((value) => value.terms))].sort();
  const spec: TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: {
      text: title,
      subtitle: [
        `${values.length} pages of ${results.searchPages.filter((t) => t.page === "first").length} terms, ` +
          `${results.options.posts?.toLocaleString("en") ?? "?"} posts · node ${results.node}`,
        "Box: quartiles and median; whiskers: min and max. Dashed: the 300 ms a page may take at most.",
      ],
      anchor: "start",
    },
    background: "white",
    width: 560,
    layer: [
      {
        data: { values },
        name: "boxes",
        mark: { type: "boxplot", extent: "min-max", size: 8 },
        encoding: {
          y: { field: "terms", type: "nominal", sort: classes, title: null, axis: { labelLimit: 320 } },
          yOffset: { field: "page", type: "nominal", sort: ["first", "next", "deep"] },
          x: { field: "ms", type: "quantitative", scale: { type: "log" }, title: "page latency, ms (log)" },
          color: {
            field: "page",
            type: "nominal",
            sort: ["first", "next", "deep"],
            scale: { domain: ["first", "next", "deep"], range: ["#4c78a8", "#f58518", "#54a24b"] },
            legend: { title: "page", orient: "top" },
          },
        },
      },
      {
        data: { values: [{ ms: 300 }] },
        mark: { type: "rule", strokeDash: [4, 4], color: "#e45756" },
        encoding: { x: { field: "ms", type: "quantitative" } },
      },
    ],
    height: { step: 12 },
  };
  return svgOf(spec);
}

/**
 * A `--curve` run as a load run of the service on the smaller table against itself on the larger
 * (a reference of the service, as get-304's plain GET is), so that its chart is a load run's: in
 * each scenario a bar per size, headed by the smaller's req/s over the larger's.
 */
function curveAsLoadResults(results: CurveResults): LoadResults {
  const { small, large } = results.sizes;
  return {
    heading: results.heading,
    serviceName: small.server,
    ...(results.date === undefined ? {} : { date: results.date }),
    options: results.options,
    node: results.node,
    runs: results.runs.map((run) => ({
      name: run.name,
      description: run.description,
      service: run.small,
      baseline: run.large,
      express: [],
      reference: large.server,
    })),
  };
}

/** The chart of a raw results file, whichever mode wrote it; `date` names the run in its title. */
export function resultsChartSvg(results: BenchResults, date: string): Promise<string> {
  const title = `${results.heading}, ${date}`;
  if ("searchPages" in results) return searchChartSvg(results, title);
  if (!("sizes" in results)) return loadChartSvg(results, title);
  const { small, large } = results.sizes;
  const sizes = `${small.server} on ${small.posts.toLocaleString("en")} posts, ${large.server} on ${large.posts.toLocaleString("en")}`;
  return loadChartSvg(curveAsLoadResults(results), title, sizes);
}

/**
 * When the run was, for a chart's title: the date the file keeps, or else the one its name
 * (`2026-11-24T17-32-51-141Z`, the run's id) says, to the minute.
 */
export function runDate(results: BenchResults, runId: string): string {
  const at =
    results.date ?? runId.replace(/^(\d{4}-\d\d-\d\d)T(\d\d)-(\d\d)-(\d\d)-(\d+)Z$/, "$1T$2:$3:$4.$5Z");
  const parsed = new Date(at);
  return Number.isNaN(parsed.getTime())
    ? runId
    : `${parsed.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}
