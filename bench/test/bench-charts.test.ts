import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type BenchResults, resultsChartSvg, runDate } from "../src/measure/charts.js";

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8")) as BenchResults;

/** The marks of the groups of class `markClass`, one array per group (a cell of a faceted chart). */
function marksOf(
  svg: string,
  markClass: string,
): { fields: Record<string, string>; d: string; fill: string }[][] {
  const groups = svg.split(`<g class="${markClass}"`).slice(1);
  return groups.map((group) => {
    const body = group.slice(0, group.indexOf("</g>"));
    return [...body.matchAll(/<path aria-label="([^"]*)"[^>]*? d="([^"]*)"(?: fill="([^"]*)")?/g)].map(
      ([, label = "", d = "", fill = ""]) => ({
        fields: Object.fromEntries(label.split("; ").map((pair) => pair.split(": ") as [string, string])),
        d,
        fill,
      }),
    );
  });
}

/** The width of a horizontal bar drawn from x = 0 (`M0,yhWIDTHv…`). */
const widthOf = (d: string) => Number(/^M0,[^h]*h([\d.]+)/.exec(d)?.[1]);
const textsOf = (svg: string) => [...svg.matchAll(/<(?:text|tspan)[^>]*>([^<]*)(?=<)/g)].map((m) => m[1]);

describe("the chart of a load run", async () => {
  const svg = await resultsChartSvg(fixture("bench-load-run.json"), "2026-11-24 17:32 UTC");
  const cells = marksOf(svg, "mark-rect role-mark bars_marks");

  it("has a cell per scenario and metric, with a bar per server that ran the scenario", () => {
    // get-one: service, baseline, Express; get-304 and login: two servers each; req/s and p99 each.
    expect(cells.map((cell) => cell.length).sort()).toEqual([2, 2, 2, 2, 3, 3]);
    expect(cells.flat()).toHaveLength(14);
  });

  it("draws each server's median req/s and p99 over the rounds", () => {
    const bars = cells.flat().map((bar) => `${bar.fields.server}: ${Number(bar.fields.value)}`);
    expect(bars.sort()).toEqual(
      [
        // get-one
        "service: 13000",
        "service: 11",
        "baseline: 10500",
        "baseline: 10",
        "express: 4500",
        "express: 38",
        // get-304, against the service's plain GET
        "service: 20000",
        "service: 7.25",
        "service, plain GET: 16500",
        "service, plain GET: 7.85",
        // login
        "service: 240",
        "service: 120",
        "baseline: 280",
        "baseline: 121",
      ].sort(),
    );
  });

  it("makes each bar's length its value on a scale from zero", () => {
    for (const cell of cells) {
      const [first, ...rest] = cell.map((bar) => widthOf(bar.d) / Number(bar.fields.value));
      for (const perUnit of rest) expect(perUnit).toBeCloseTo(first ?? Number.NaN, 6);
    }
  });

  it("gives each server one colour of its own", () => {
    const fills = new Map<string, Set<string>>();
    for (const bar of cells.flat()) {
      fills.set(bar.fields.server ?? "", (fills.get(bar.fields.server ?? "") ?? new Set()).add(bar.fill));
    }
    expect([...fills.keys()].sort()).toEqual(["baseline", "express", "service", "service, plain GET"]);
    for (const colours of fills.values()) expect(colours.size).toBe(1);
    expect(new Set([...fills.values()].flatMap((colours) => [...colours])).size).toBe(4);
  });

  it("names every scenario, with the service's paired req/s ratios, and every server in the legend", () => {
    const texts = textsOf(svg);
    for (const line of [
      "get-one",
      "1.24× baseline",
      "2.95× express",
      "get-304",
      "1.22× service, plain GET",
      "login",
      "0.86× baseline",
    ])
      expect(texts).toContain(line);
    for (const server of ["service", "baseline", "express", "service, plain GET"])
      expect(texts).toContain(server);
    expect(texts).toContain("requests per second (higher is better)");
    expect(texts).toContain("p99 latency, ms (lower is better)");
    expect(texts).toContain("Service vs baseline and Express on PostgreSQL, 2026-11-24 17:32 UTC");
  });
});

describe("the chart of a search-only run", async () => {
  const svg = await resultsChartSvg(fixture("bench-search-run.json"), "2026-11-24 18:00 UTC");
  const boxes = marksOf(svg, "mark-rect role-mark boxes_layer_2_marks").flat();

  it("has one box per class of term and kind of page measured, spanning its median", () => {
    const median = (box: (typeof boxes)[number]) => Number(box.fields["Median of page latency, ms (log)"]);
    const max = (box: (typeof boxes)[number]) => Number(box.fields["Max of page latency, ms (log)"]);
    expect(
      boxes.map((box) => `${box.fields.terms} / ${box.fields.page}: ${median(box)} … ${max(box)}`).sort(),
    ).toEqual(
      [
        "3+ chars, rare / first: 25 … 90",
        "3+ chars, rare / next: 9 … 11",
        "3+ chars, rare / deep: 44 … 150",
        "absent / first: 65 … 70",
        "absent / deep: 200 … 240",
      ].sort(),
    );
  });

  it("names every class of term and every kind of page", () => {
    const texts = textsOf(svg);
    for (const name of ["3+ chars, rare", "absent", "first", "next", "deep"]) expect(texts).toContain(name);
    expect(texts).toContain("Search pages on PostgreSQL, 2026-11-24 18:00 UTC");
  });
});

describe("runDate", () => {
  it("takes the date the file keeps, else the one the run's id says", () => {
    const results = fixture("bench-load-run.json");
    expect(runDate(results, "2026-11-24T17-32-51-141Z")).toBe("2026-11-24 17:32 UTC");
    expect(runDate({ ...results, date: "2026-11-25T08:05:00.000Z" }, "whatever")).toBe(
      "2026-11-25 08:05 UTC",
    );
    expect(runDate(results, "not-a-run-id")).toBe("not-a-run-id");
  });
});
