import { describe, expect, it } from "vitest";
import { type CurveResults, type CurveScenarioRuns, resultsChartSvg } from "../src/measure/charts.js";
import { pairedCurve, renderPairedCurve } from "../src/measure/curve.js";
import type { Round } from "../src/measure/report.js";
import { parseOptions, sizeLabel } from "../src/options.js";

/** A round of the given latencies; the rest is what the curve does not read. */
const round = (p50Ms: number, p99Ms: number): Round => ({
  requestsPerSecond: 1000 / p50Ms,
  p50Ms,
  p99Ms,
  responses: 1000,
  non2xx: 0,
  errors: 0,
  badStatuses: {},
  cpuMsPerRequest: 0.1,
  databaseCpuMsPerRequest: 0.05,
  rssMaxBytes: 100 * 2 ** 20,
});

/** A scenario whose round i ran at `small[i]` on the smaller table and `large[i]` on the larger ([p50, p99] each). */
const scenario = (
  name: string,
  small: readonly [number, number][],
  large: readonly [number, number][],
): CurveScenarioRuns => ({
  name,
  description: name,
  small: small.map(([p50, p99]) => round(p50, p99)),
  large: large.map(([p50, p99]) => round(p50, p99)),
});

const results = (runs: readonly CurveScenarioRuns[]): CurveResults => ({
  heading: "The curve on PostgreSQL",
  date: "2026-11-29T10:00:00.000Z",
  options: { rounds: 3, duration: 10, connections: 64 },
  node: "v20.20.2",
  sizes: {
    small: { server: "service-1m", posts: 1_000_000 },
    large: { server: "service-10m", posts: 10_000_000 },
  },
  runs,
});

describe("the curve measured in one run, both sizes in the same rounds", () => {
  // The machine slowed down in round 3, on both sizes alike: each round's ratio sees the same
  // machine, the medians of each size do not.
  const getOne = scenario(
    "get-one",
    [
      [1, 4],
      [2, 5],
      [4, 12],
    ],
    [
      [1.2, 4.4],
      [2.2, 6],
      [6, 13.2],
    ],
  );

  it("grows by the median over rounds of each round's ratio, and shows each size's medians", () => {
    const [row] = pairedCurve(results([getOne]));
    // Per round p50: 1.2, 1.1, 1.5; p99: 1.1, 1.2, 1.1. The ratio of the medians would say 1.1 and 1.2.
    expect(row?.p50Growth).toBeCloseTo(1.2, 9);
    expect(row?.p99Growth).toBeCloseTo(1.1, 9);
    expect(row?.small).toEqual({ p50Ms: 2, p99Ms: 5 });
    expect(row?.large).toEqual({ p50Ms: 2.2, p99Ms: 6 });
    expect(row?.pass).toBe(true);
  });

  it("pairs rounds by their number, and leaves out a scenario without a round of both sizes", () => {
    const unfinished = scenario(
      "list-first",
      [
        [1, 2],
        [1, 2],
      ],
      [[1.1, 2.2]],
    );
    const rows = pairedCurve(results([unfinished, scenario("create", [[1, 2]], [])]));
    expect(rows.map((row) => [row.scenario, row.p50Growth])).toEqual([
      ["list-first", expect.closeTo(1.1, 9)],
    ]);
  });

  it("shows a cold page's growth without judging it, and names what grew too much", () => {
    const cold = scenario("list-cold", [[10, 20]], [[30, 60]]);
    const first = scenario("list-first", [[4, 10]], [[4.4, 14]]);
    const curve = results([getOne, first, cold]);
    expect(pairedCurve(curve).map((row) => row.pass)).toEqual([true, false, undefined]);
    const table = renderPairedCurve(curve);
    expect(table).toContain("| 1,000,000 posts, p50 / p99 ms | 10,000,000 posts, p50 / p99 ms |");
    expect(table).toContain("| list-first | 4.00 / 10.00 | 4.40 / 14.00 | 1.10 / 1.40 | FAIL |");
    expect(table).toContain("| list-cold | 10.00 / 20.00 | 30.00 / 60.00 | 3.00 / 3.00 | not judged:");
    expect(table).toContain("Measured in one run, the two sizes in alternating slices of the same rounds");
    expect(table).toContain("Grew by more than 1.3×: list-first.");
    expect(renderPairedCurve(results([getOne, cold]))).toContain(
      "Every judged scenario (1) grew by at most 1.3×.",
    );
  });

  it("shows the baseline's growth beside the service's, and judges the service's alone", () => {
    const withBaseline = (
      run: CurveScenarioRuns,
      small: readonly [number, number][],
      large: readonly [number, number][],
    ): CurveScenarioRuns => ({
      ...run,
      baseline: {
        small: small.map(([p50, p99]) => round(p50, p99)),
        large: large.map(([p50, p99]) => round(p50, p99)),
      },
    });
    // The service grew 1.8×, the baseline 1.7× on the same tables: still past the bound.
    const service = scenario("get-one", [[10, 30]], [[18, 54]]);
    const both = withBaseline(service, [[20, 40]], [[34, 68]]);
    const small = withBaseline(scenario("create", [[10, 20]], [[12, 24]]), [[10, 20]], [[30, 60]]);
    const curve = results([both, small]);
    const rows = pairedCurve(curve);
    expect(rows.map((row) => [row.scenario, row.pass])).toEqual([
      ["get-one", false],
      ["create", true],
    ]);
    expect(rows[0]?.baselineGrowth).toEqual({ p50: expect.closeTo(1.7, 9), p99: expect.closeTo(1.7, 9) });
    const table = renderPairedCurve(curve);
    expect(table).toContain("| growth p50 / p99 | the baseline's growth p50 / p99 | ≤ 1.3× |");
    expect(table).toContain("| get-one | 10.00 / 30.00 | 18.00 / 54.00 | 1.80 / 1.80 | 1.70 / 1.70 | FAIL |");
    expect(table).toContain("| create | 10.00 / 20.00 | 12.00 / 24.00 | 1.20 / 1.20 | 3.00 / 3.00 | PASS |");
    // A run kept before the baseline was measured has no such column.
    expect(renderPairedCurve(results([service]))).not.toContain("the baseline's growth");
  });

  it("draws a load run's chart with a bar per size", async () => {
    const svg = await resultsChartSvg(results([getOne]), "2026-11-29 10:00 UTC");
    for (const text of [
      "The curve on PostgreSQL, 2026-11-29 10:00 UTC",
      "service-1m",
      "service-10m",
      "service-1m on 1,000,000 posts, service-10m on 10,000,000",
    ])
      expect(svg).toContain(text);
  });
});

describe("--curve", () => {
  it("names the larger database and its service after its size", () => {
    expect([10_000_000, 200_000, 1_500_000, 12_345].map(sizeLabel)).toEqual([
      "10m",
      "200k",
      "1500k",
      "12345",
    ]);
    const options = parseOptions(["--", "--curve", "--posts", "20000", "--curve-posts", "200000"]);
    expect(options.curveDatabase).toBe(`${process.env.BENCH_DATABASE ?? "posts_bench"}_200k`);
  });

  it("takes no larger table that is not larger, nor a mode it cannot run beside", () => {
    expect(() => parseOptions(["--curve", "--posts", "20000", "--curve-posts", "20000"])).toThrow(
      /--curve-posts must be more than --posts/,
    );
    expect(() => parseOptions(["--curve", "--embedded"])).toThrow(/not with --embedded/);
    expect(() => parseOptions(["--curve-posts", "200000"])).toThrow(/--curve-posts is for --curve/);
  });
});
