/**
 * `pnpm bench:curve SMALL.json LARGE.json`: the service's latency at two table sizes side by
 * side, from two `pnpm bench` runs kept under bench/results/ (measure/curve.ts);
 * `pnpm bench:curve CURVE.json`: the table of a `pnpm bench -- --curve` run again, from the JSON
 * it kept. The README's section on the bench says how to make either.
 */
import { readFileSync } from "node:fs";
import type { BenchResults, CurveResults, LoadResults } from "./measure/charts.js";
import { renderCurve, renderPairedCurve } from "./measure/curve.js";

const files = process.argv.slice(2).filter((arg) => arg !== "--");
const read = (file: string) => JSON.parse(readFileSync(file, "utf8")) as BenchResults;
const loadRun = (file: string): LoadResults => {
  const results = read(file);
  if ("sizes" in results) throw new Error(`${file} is a --curve run: name it alone`);
  if (!("runs" in results)) throw new Error(`${file} is a --search-only run, not a load run`);
  return results;
};
const curveRun = (file: string): CurveResults => {
  const results = read(file);
  if (!("sizes" in results)) throw new Error(`${file} is not a --curve run: name two load runs to compare`);
  return results;
};

if (files.length === 1) {
  console.log(renderPairedCurve(curveRun(files[0] as string)));
} else if (files.length === 2) {
  console.log(renderCurve(loadRun(files[0] as string), loadRun(files[1] as string)));
} else {
  process.stderr.write(
    "usage: pnpm bench:curve SMALL.json LARGE.json (two load runs of bench/results/)\n" +
      "       pnpm bench:curve CURVE.json (a --curve run of bench/results/)\n",
  );
  process.exit(2);
}
