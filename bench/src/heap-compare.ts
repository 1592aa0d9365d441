/**
 * `node bench/dist/heap-compare.js BEFORE.heapsnapshot AFTER.heapsnapshot [rows]`: prints, as
 * Markdown, how the heap of one process changed between two of its snapshots, by constructor
 * (see soak/heap-compare.ts). `node bench/dist/heap-compare.js --summary FILE [rows]`: the classes
 * of one snapshot that retain most. The soak takes snapshots with SOAK_HEAP_SNAPSHOTS=1.
 */
import { compareSnapshots, comparisonMarkdown, summaryMarkdown } from "./soak/heap-compare.js";

const [first, second, rows] = process.argv.slice(2);
if (first === "--summary" && second !== undefined) {
  process.stdout.write(await summaryMarkdown(second, Number(rows ?? 30)));
} else if (first !== undefined && second !== undefined) {
  process.stdout.write(comparisonMarkdown(await compareSnapshots(first, second), Number(rows ?? 15)));
} else {
  process.stderr.write(
    "usage: node bench/dist/heap-compare.js BEFORE.heapsnapshot AFTER.heapsnapshot [rows]\n" +
      "       node bench/dist/heap-compare.js --summary FILE.heapsnapshot [rows]\n",
  );
  process.exit(2);
}
