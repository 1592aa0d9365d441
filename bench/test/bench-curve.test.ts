import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { LoadResults } from "../src/measure/charts.js";
import { curve, renderCurve } from "../src/measure/curve.js";
import type { Round, ScenarioRuns } from "../src/measure/report.js";

const small = JSON.parse(
  readFileSync(new URL("./fixtures/bench-load-run.json", import.meta.url), "utf8"),
) as LoadResults;

/** `run` at ten times the posts, each scenario's latencies multiplied by `growth[name]` (1 if absent). */
function grown(run: LoadResults, growth: Record<string, number>, extra: ScenarioRuns[] = []): LoadResults {
  const scale = (rounds: readonly Round[], by: number) =>
    rounds.map((round) => ({ ...round, p50Ms: round.p50Ms * by, p99Ms: round.p99Ms * by }));
  return {
    ...run,
    options: { ...run.options, posts: (run.options.posts as number) * 10 },
    runs: [...run.runs.map((r) => ({ ...r, service: scale(r.service, growth[r.name] ?? 1) })), ...extra],
  };
}

const medianOf = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length % 2 === 1
    ? (sorted[sorted.length >> 1] as number)
    : ((sorted[sorted.length / 2 - 1] as number) + (sorted[sorted.length / 2] as number)) / 2;
};

describe("the ten-million-post curve", () => {
  it("compares the service's median p50 and p99 of each scenario, the larger run over the smaller", () => {
    const large = grown(small, { "get-one": 1.2, login: 2 });
    const rows = curve(small, large);
    expect(rows.map((row) => row.scenario)).toEqual(["get-one", "get-304", "login"]);
    const getOne = small.runs[0] as ScenarioRuns;
    const row = rows[0];
    expect(row?.small.p50Ms).toBeCloseTo(medianOf(getOne.service.map((r) => r.p50Ms)), 9);
    expect(row?.large.p99Ms).toBeCloseTo(1.2 * medianOf(getOne.service.map((r) => r.p99Ms)), 9);
    expect(row?.p50Growth).toBeCloseTo(1.2, 9);
    expect(rows.map((r) => r.pass)).toEqual([true, true, false]);
    // The same whichever run is named first.
    expect(curve(large, small)).toEqual(rows);
  });

  it("shows a cold page's growth without judging it, and leaves out a scenario only one run measured", () => {
    const cold = { ...(small.runs[0] as ScenarioRuns), name: "list-cold" };
    const withCold = { ...small, runs: [...small.runs, cold] };
    const large = grown(withCold, { "list-cold": 3 }, [
      { ...(small.runs[0] as ScenarioRuns), name: "create" },
    ]);
    const rows = curve(withCold, large);
    expect(rows.map((row) => row.scenario)).toEqual(["get-one", "get-304", "login", "list-cold"]);
    expect(rows.at(-1)?.pass).toBeUndefined();
    expect(renderCurve(withCold, large)).toContain("Every judged scenario (3) grew by at most 1.3×.");
  });

  it("names what grew too much, and refuses two runs of one size", () => {
    expect(renderCurve(small, grown(small, { "get-304": 1.5 }))).toContain(
      "Grew by more than 1.3×: get-304.",
    );
    expect(() => curve(small, small)).toThrow(/both runs had 10000 posts/);
  });
});
