/**
 * The ten-million-post curve (issue 20): the service's latency in each scenario of two load runs
 * of different sizes, side by side, with the ratio of the larger to the smaller. The two runs are
 * separate `pnpm bench` runs (a seed of ten million posts takes minutes and gigabytes, so it is
 * never the default), compared afterwards from the JSON each kept under bench/results/.
 */
import type { LoadResults } from "./charts.js";
import { type ScenarioRuns, summarize } from "./report.js";

/** Most growth of p50 and p99 from the smaller run to the larger one, as issue 20 asks. */
export const CURVE_MAX_GROWTH = 1.3;

/**
 * Scenarios whose latency is expected to grow with the table, and why: they are shown, not
 * judged. A cold page holds posts no recent request read, so neither the service's cache nor
 * PostgreSQL's buffers hold them, and at ten million posts those buffers hold a smaller share of
 * the table and its indexes.
 */
const UNJUDGED: Readonly<Record<string, string>> = {
  "list-cold": "reads posts outside every cache but the page cache, a smaller share of the larger table",
};

/** One scenario of the curve. */
export interface CurveRow {
  readonly scenario: string;
  readonly small: { readonly p50Ms: number; readonly p99Ms: number };
  readonly large: { readonly p50Ms: number; readonly p99Ms: number };
  /** large / small. */
  readonly p50Growth: number;
  readonly p99Growth: number;
  /** Whether both grew by at most {@link CURVE_MAX_GROWTH}; `undefined` for a scenario not judged. */
  readonly pass: boolean | undefined;
  /** Why the scenario is not judged, when it is not. */
  readonly note?: string;
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
 * medians over each run's rounds. Throws unless the runs are of two different sizes.
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
    const p50Growth = l.p50Ms / s.p50Ms;
    const p99Growth = l.p99Ms / s.p99Ms;
    const note = UNJUDGED[smallRun.name];
    return [
      {
        scenario: smallRun.name,
        small: { p50Ms: s.p50Ms, p99Ms: s.p99Ms },
        large: { p50Ms: l.p50Ms, p99Ms: l.p99Ms },
        p50Growth,
        p99Growth,
        pass: note === undefined ? p50Growth <= CURVE_MAX_GROWTH && p99Growth <= CURVE_MAX_GROWTH : undefined,
        ...(note === undefined ? {} : { note }),
      },
    ];
  });
}

const count = (n: number) => n.toLocaleString("en-US");
const ms = (n: number) => n.toFixed(2);
const times = (n: number) => n.toFixed(2);

/** The curve as a Markdown table, with its verdicts. */
export function renderCurve(first: LoadResults, second: LoadResults): string {
  const rows = curve(first, second);
  const [small, large] = [postsOf(first), postsOf(second)].sort((a, b) => a - b) as [number, number];
  const lines = [
    `| scenario | ${count(small)} posts, p50 / p99 ms | ${count(large)} posts, p50 / p99 ms | growth p50 / p99 | ≤ ${CURVE_MAX_GROWTH}× |`,
    "|---|---|---|---|---|",
    ...rows.map(
      (row) =>
        `| ${row.scenario} | ${ms(row.small.p50Ms)} / ${ms(row.small.p99Ms)} | ${ms(row.large.p50Ms)} / ${ms(row.large.p99Ms)} | ` +
        `${times(row.p50Growth)} / ${times(row.p99Growth)} | ${row.pass === undefined ? `not judged: ${row.note}` : row.pass ? "PASS" : "FAIL"} |`,
    ),
  ];
  const judged = rows.filter((row) => row.pass !== undefined);
  const failed = judged.filter((row) => row.pass === false).map((row) => row.scenario);
  lines.push(
    "",
    failed.length === 0
      ? `Every judged scenario (${judged.length}) grew by at most ${CURVE_MAX_GROWTH}×.`
      : `Grew by more than ${CURVE_MAX_GROWTH}×: ${failed.join(", ")}.`,
  );
  return lines.join("\n");
}
