/**
 * The ten-million-post curve: the service's latency in each scenario at two table
 * sizes, side by side, with the growth from the smaller to the larger. Measured either in one run
 * (`pnpm bench -- --curve`), the service on each size in alternating slices of the same rounds,
 * or from two separate `pnpm bench` runs compared afterwards from the JSON each kept under
 * bench/results/ (`pnpm bench:curve`), whose growth also holds whatever the machine did between
 * them.
 */
import type { CurveResults, LoadResults } from "./charts.js";
import { type Round, type ScenarioRuns, summarize } from "./report.js";
import { median } from "./stats.js";

/** Most growth of p50 and p99 from the smaller table to the larger one (bench/README.md#targets). */
export const CURVE_MAX_GROWTH = 1.3;

/** The scenarios the curve measures: reads of every kind, searches and a write. */
export const CURVE_SCENARIOS: readonly string[] = [
  "get-one",
  "list-first",
  "list-deep",
  "list-cold",
  "search-rare",
  "search-common",
  "search-korean",
  "create",
];

/**
 * Scenarios whose latency is expected to grow with the table, and why: they are shown, not
 * judged. A cold page holds posts no recent request read, so neither the service's cache nor
 * PostgreSQL's buffers hold them, and at ten million posts those buffers hold a smaller share of
 * the table and its indexes.
 */
const UNJUDGED: Readonly<Record<string, string>> = {
  "list-cold": "reads posts outside every cache but the page cache, a smaller share of the larger table",
};

/** A scenario's latency at one size: the medians over its rounds. */
interface Latency {
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** One scenario of the curve. */
export interface CurveRow {
  readonly scenario: string;
  readonly small: Latency;
  readonly large: Latency;
  /** large / small. */
  readonly p50Growth: number;
  readonly p99Growth: number;
  /**
   * The baseline's growth on the same tables in the same rounds, when the run measured it: what
   * the same statements cost more on the larger table, shown beside the service's, not judged
   * (the baseline is the limit of the stack for a lookup, but a naive walk for a search).
   */
  readonly baselineGrowth?: Growth;
  /** Whether both grew by at most {@link CURVE_MAX_GROWTH}; `undefined` for a scenario not judged. */
  readonly pass: boolean | undefined;
  /** Why the scenario is not judged, when it is not. */
  readonly note?: string;
}

/** How much p50 and p99 grew from the smaller table to the larger, each as larger / smaller. */
interface Growth {
  readonly p50: number;
  readonly p99: number;
}

/** The row of `scenario`, judged unless {@link UNJUDGED} says why not. */
function curveRow(
  scenario: string,
  small: Latency,
  large: Latency,
  growth: Growth,
  baselineGrowth?: Growth,
): CurveRow {
  const note = UNJUDGED[scenario];
  return {
    scenario,
    small: { p50Ms: small.p50Ms, p99Ms: small.p99Ms },
    large: { p50Ms: large.p50Ms, p99Ms: large.p99Ms },
    p50Growth: growth.p50,
    p99Growth: growth.p99,
    ...(baselineGrowth === undefined ? {} : { baselineGrowth }),
    pass: note === undefined ? growth.p50 <= CURVE_MAX_GROWTH && growth.p99 <= CURVE_MAX_GROWTH : undefined,
    ...(note === undefined ? {} : { note }),
  };
}

/** The size of the table a run measured. */
export function postsOf(results: LoadResults): number {
  const posts = results.options.posts;
  if (typeof posts !== "number")
    throw new Error(`the run "${results.heading}" does not say how many posts it had`);
  return posts;
}

/**
 * The curve of the scenarios both runs measured (in the smaller run's order), from the service's
 * medians over each run's rounds: growth is the ratio of the two medians. Throws unless the runs
 * are of two different sizes.
 */
export function curve(first: LoadResults, second: LoadResults): CurveRow[] {
  const [small, large] = postsOf(first) <= postsOf(second) ? [first, second] : [second, first];
  if (postsOf(small) === postsOf(large)) throw new Error(`both runs had ${postsOf(small)} posts`);
  const byName = new Map<string, ScenarioRuns>(large.runs.map((run) => [run.name, run]));
  return small.runs.flatMap((smallRun) => {
    const largeRun = byName.get(smallRun.name);
    if (largeRun === undefined || smallRun.service.length === 0 || largeRun.service.length === 0) return [];
    const s = summarize(smallRun.service);
    const l = summarize(largeRun.service);
    return [curveRow(smallRun.name, s, l, { p50: l.p50Ms / s.p50Ms, p99: l.p99Ms / s.p99Ms })];
  });
}

/**
 * The curve of a `--curve` run, in its scenarios' order. Round i of the larger table ran in
 * alternating slices with round i of the smaller, so growth is the median over rounds of each
 * round's ratio, larger over smaller, as the service's ratios to the baseline are, and the
 * baseline's growth (when the run measured it) likewise from its rounds; the latencies shown are
 * each size's medians over its rounds. A scenario without a round of both is left out.
 */
export function pairedCurve(results: CurveResults): CurveRow[] {
  return results.runs.flatMap((run) => {
    const growth = pairedGrowth(run.small, run.large);
    if (growth === undefined) return [];
    const baseline =
      run.baseline === undefined ? undefined : pairedGrowth(run.baseline.small, run.baseline.large);
    return [curveRow(run.name, summarize(run.small), summarize(run.large), growth, baseline)];
  });
}

/**
 * The median over rounds of each round's ratio, larger over smaller, of p50 and of p99, rounds
 * paired by their number; `undefined` when no round has both sizes.
 */
function pairedGrowth(small: readonly Round[], large: readonly Round[]): Growth | undefined {
  const pairs = small.flatMap((s, i): [Round, Round][] => {
    const l = large[i];
    return l === undefined ? [] : [[s, l]];
  });
  if (pairs.length === 0) return undefined;
  const growth = (metric: (round: Round) => number) => median(pairs.map(([s, l]) => metric(l) / metric(s)));
  return { p50: growth((round) => round.p50Ms), p99: growth((round) => round.p99Ms) };
}

const count = (n: number) => n.toLocaleString("en-US");
const ms = (n: number) => n.toFixed(2);
const times = (n: number) => n.toFixed(2);

/** How a curve's two sizes were measured, said under its table. */
const MEASURED = {
  apart:
    "Measured in two runs, one per size: growth is the ratio of the service's medians over each run's " +
    "rounds, and holds whatever the machine did between the runs too.",
  paired:
    "Measured in one run, the two sizes in alternating slices of the same rounds: growth is the median " +
    "over rounds of each round's ratio, larger over smaller, the baseline's (where shown) likewise.",
} as const;

/** `rows` as a Markdown table of the sizes `small` and `large`, with its verdicts and how it was measured. */
function renderRows(
  rows: readonly CurveRow[],
  small: number,
  large: number,
  measured: keyof typeof MEASURED,
): string {
  // The baseline's column only where the run measured it: runs kept before it have none.
  const withBaseline = rows.some((row) => row.baselineGrowth !== undefined);
  const baselineCell = (row: CurveRow) =>
    withBaseline
      ? row.baselineGrowth === undefined
        ? " not measured |"
        : ` ${times(row.baselineGrowth.p50)} / ${times(row.baselineGrowth.p99)} |`
      : "";
  const lines = [
    `| scenario | ${count(small)} posts, p50 / p99 ms | ${count(large)} posts, p50 / p99 ms | growth p50 / p99 |` +
      `${withBaseline ? " the baseline's growth p50 / p99 |" : ""} ≤ ${CURVE_MAX_GROWTH}× |`,
    `|---|---|---|---|${withBaseline ? "---|" : ""}---|`,
    ...rows.map(
      (row) =>
        `| ${row.scenario} | ${ms(row.small.p50Ms)} / ${ms(row.small.p99Ms)} | ${ms(row.large.p50Ms)} / ${ms(row.large.p99Ms)} | ` +
        `${times(row.p50Growth)} / ${times(row.p99Growth)} |${baselineCell(row)} ` +
        `${row.pass === undefined ? `not judged: ${row.note}` : row.pass ? "PASS" : "FAIL"} |`,
    ),
  ];
  const judged = rows.filter((row) => row.pass !== undefined);
  const failed = judged.filter((row) => row.pass === false).map((row) => row.scenario);
  lines.push(
    "",
    MEASURED[measured],
    "",
    failed.length === 0
      ? `Every judged scenario (${judged.length}) grew by at most ${CURVE_MAX_GROWTH}×.`
      : `Grew by more than ${CURVE_MAX_GROWTH}×: ${failed.join(", ")}.`,
  );
  return lines.join("\n");
}

/** The curve of two separate runs as a Markdown table, with its verdicts. */
export function renderCurve(first: LoadResults, second: LoadResults): string {
  const [small, large] = [postsOf(first), postsOf(second)].sort((a, b) => a - b) as [number, number];
  return renderRows(curve(first, second), small, large, "apart");
}

/** The curve of a `--curve` run as a Markdown table, with its verdicts. */
export function renderPairedCurve(results: CurveResults): string {
  return renderRows(pairedCurve(results), results.sizes.small.posts, results.sizes.large.posts, "paired");
}
