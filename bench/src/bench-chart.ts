/**
 * `node bench/dist/bench-chart.js RUN.json [OUT.svg]`: draws the chart of a bench run (a load
 * run or `--search-only`) again from the raw JSON it kept under bench/results/, by default beside
 * it as RUN.svg (see measure/charts.ts). `pnpm bench` draws it itself at the end of a run.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { type BenchResults, resultsChartSvg, runDate } from "./measure/charts.js";

const [input, output] = process.argv.slice(2);
if (input === undefined) {
  process.stderr.write("usage: node bench/dist/bench-chart.js RUN.json [OUT.svg]\n");
  process.exit(2);
}
const results = JSON.parse(readFileSync(input, "utf8")) as BenchResults;
const target = output ?? `${input.replace(/\.json$/, "")}.svg`;
writeFileSync(target, await resultsChartSvg(results, runDate(results, basename(input, ".json"))));
process.stderr.write(`chart: ${target}\n`);
