/**
 * `node bench/dist/heap-compare.js BEFORE.heapsnapshot AFTER.heapsnapshot [rows]`: prints, as
 * Markdown, how the heap of one process changed between two of its snapshots, by constructor
 * (see soak/heap-compare.ts). The soak takes such snapshots with SOAK_HEAP_SNAPSHOTS=1.
 */
import { compareSnapshots, comparisonMarkdown } from "./soak/heap-compare.js";

const [before, after, rows] = process.argv.slice(2);
if (before === undefined || after === undefined) {
  process.stderr.write(
    "usage: node bench/dist/heap-compare.js BEFORE.heapsnapshot AFTER.heapsnapshot [rows]\n",
  );
  process.exit(2);
}
process.stdout.write(comparisonMarkdown(await compareSnapshots(before, after), Number(rows ?? 15)));
