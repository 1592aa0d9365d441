/**
 * `node bench/dist/draw-soak-chart.js RUN.json OUT.svg [title]`: draws the memory chart of a soak run
 * from the JSON file it kept under bench/results/ (see soak/soak-chart.ts). The soak draws it
 * itself at the end of a run; this draws it again, e.g. for an older run.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { type MemorySeries, memoryChartSvg } from "./soak/soak-chart.js";

const [input, output, title] = process.argv.slice(2);
if (input === undefined || output === undefined) {
  process.stderr.write("usage: node bench/dist/draw-soak-chart.js RUN.json OUT.svg [title]\n");
  process.exit(2);
}
const run = JSON.parse(readFileSync(input, "utf8")) as MemorySeries & { date: string };
writeFileSync(output, await memoryChartSvg(run, title ?? `Soak memory, run of ${run.date}`));
