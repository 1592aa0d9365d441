/**
 * `pnpm bench:curve SMALL.json LARGE.json`: the service's latency at two table sizes side by
 * side, from two `pnpm bench` runs kept under bench/results/ (measure/curve.ts). The README's
 * section on the bench gives the two runs to make first.
 */
import { readFileSync } from "node:fs";
import type { BenchResults, LoadResults } from "./measure/charts.js";
import { renderCurve } from "./measure/curve.js";

const files = process.argv.slice(2).filter((arg) => arg !== "--");
if (files.length !== 2) {
  process.stderr.write("usage: pnpm bench:curve SMALL.json LARGE.json (two load runs of bench/results/)\n");
  process.exit(2);
}
const [first, second] = files.map((file) => {
  const results = JSON.parse(readFileSync(file, "utf8")) as BenchResults;
  if (!("runs" in results)) throw new Error(`${file} is a --search-only run, not a load run`);
  return results as LoadResults;
}) as [LoadResults, LoadResults];
console.log(renderCurve(first, second));
