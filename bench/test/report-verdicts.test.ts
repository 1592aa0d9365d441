import { describe, expect, it } from "vitest";
import { judge, type Round, type ScenarioRuns } from "../src/measure/report.js";

/** A round of `requestsPerSecond`, nothing else of note. */
const round = (requestsPerSecond: number): Round => ({
  requestsPerSecond,
  p50Ms: 1,
  p99Ms: 2,
  responses: requestsPerSecond * 10,
  non2xx: 0,
  errors: 0,
  badStatuses: {},
  cpuMsPerRequest: 0.1,
  databaseCpuMsPerRequest: 0.05,
  rssMaxBytes: 100 * 1024 * 1024,
});

const runs = (name: string, service: number[], baseline: number[], reference?: string): ScenarioRuns => ({
  name,
  description: name,
  service: service.map(round),
  baseline: baseline.map(round),
  express: [],
  ...(reference === undefined ? {} : { reference }),
});

const depthVerdict = (all: ScenarioRuns[]) =>
  judge(all).find((verdict) => verdict.target.startsWith("list-deep: req/s >= 0.95x"));

describe("the verdict on list-deep against list-first", () => {
  // list-first measured on a quiet minute, list-deep on a busier one: their medians 0.80x apart.
  const first = runs("list-first", [10_000, 10_200, 9_900], [3_000, 3_000, 3_000]);
  const deep = runs("list-deep", [8_000, 8_100, 7_900], [2_400, 2_500, 2_400]);

  it("compares the two scenarios' medians when list-depth did not run", () => {
    expect(depthVerdict([first, deep])).toEqual({
      target: "list-deep: req/s >= 0.95x the service's list-first",
      measured: "0.80x (baseline: 0.80x)",
      pass: false,
    });
  });

  it("takes list-depth's paired rounds when it ran: the median of deep / first per round", () => {
    // Rounds of 0.97, 1.01 and 0.93 deep / first, each measured in alternating slices.
    const depth = runs("list-depth", [9_700, 9_090, 9_300], [10_000, 9_000, 10_000], "service, list-first");
    expect(depthVerdict([first, deep, depth])).toEqual({
      target: "list-deep: req/s >= 0.95x the service's list-first (list-depth, paired)",
      measured: "0.97x",
      pass: true,
    });
    const slower = runs("list-depth", [9_000, 9_090, 9_300], [10_000, 9_000, 10_000], "service, list-first");
    expect(depthVerdict([first, deep, slower])?.pass).toBe(false);
  });
});

describe("the figures the verdicts print", () => {
  const first = runs("list-first", [10_000], [3_000]);
  const deep = runs("list-deep", [9_000], [2_700]);
  const depth = (ratio: number) =>
    depthVerdict([first, deep, runs("list-depth", [ratio * 10_000], [10_000], "service, list-first")]);

  it("show two decimals, and more where two would print the line itself", () => {
    expect(depth(0.947)).toMatchObject({ measured: "0.947x", pass: false });
    expect(depth(0.9499)).toMatchObject({ measured: "0.9499x", pass: false });
    expect(depth(0.953)).toMatchObject({ measured: "0.953x", pass: true });
    expect(depth(0.95)).toMatchObject({ measured: "0.95x", pass: true });
    expect(depth(0.9)).toMatchObject({ measured: "0.90x", pass: false });
  });

  it("show a RSS just past its bound in tenths of a megabyte", () => {
    const heavy = { ...first, service: [{ ...round(10_000), rssMaxBytes: 200.4 * 1024 * 1024 }] };
    const rss = judge([heavy]).find((verdict) => verdict.target.startsWith("RSS"));
    expect(rss).toMatchObject({ measured: "200.4 MB", pass: false });
  });
});

describe("--closed-loop's verdicts", () => {
  /** GET one at `connections`: the service's and the baseline's rounds, each `[req/s, p50 ms]`. */
  const at = (connections: number, service: [number, number][], baseline: [number, number][]) => ({
    name: `get-one-c${connections}`,
    description: `GET one at ${connections}`,
    service: service.map(([rps, p50Ms]) => ({ ...round(rps), p50Ms })),
    baseline: baseline.map(([rps, p50Ms]) => ({ ...round(rps), p50Ms })),
    express: [],
  });
  const verdicts = (all: ScenarioRuns[]) =>
    judge(all)
      .filter((v) => /^get-one-c\d+: (req\/s|p50)/.test(v.target))
      .map((v) => [v.target, v.measured, v.pass]);

  it("judges req/s at 32 and 64 connections and the p50 alone, each the median of the rounds' ratios", () => {
    const all = [
      at(
        64,
        [
          [3_500, 9],
          [3_900, 9],
          [5_200, 9],
        ],
        [
          [2_500, 20],
          [2_500, 20],
          [2_500, 20],
        ],
      ),
      at(
        32,
        [
          [4_000, 8],
          [4_800, 8],
          [4_500, 8],
        ],
        [
          [2_500, 12],
          [2_500, 12],
          [2_500, 12],
        ],
      ),
      // One round of three slower, as a busy slice of the machine makes it: the median holds.
      at(
        1,
        [
          [1_500, 0.45],
          [1_400, 0.5],
          [1_500, 0.6],
        ],
        [
          [1_500, 0.5],
          [1_500, 0.5],
          [1_500, 0.5],
        ],
      ),
    ];
    expect(verdicts(all)).toEqual([
      ["get-one-c32: req/s >= 1.6x baseline", "1.80x", true],
      ["get-one-c64: req/s >= 1.6x baseline", "1.56x", false],
      ["get-one-c1: p50 <= 1x baseline p50", "1.00x", true],
    ]);
    const slower = at(
      1,
      [
        [1_400, 0.55],
        [1_400, 0.52],
        [1_500, 0.6],
      ],
      [
        [1_500, 0.5],
        [1_500, 0.5],
        [1_500, 0.5],
      ],
    );
    expect(verdicts([slower])).toEqual([["get-one-c1: p50 <= 1x baseline p50", "1.10x", false]]);
  });
});
