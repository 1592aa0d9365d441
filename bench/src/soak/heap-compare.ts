/**
 * Compares two heap snapshots of one process by constructor, as Chrome DevTools' Summary and
 * Comparison views do: for each class, its objects, their own size and what they retain in each
 * snapshot, and how many objects were allocated and freed in between. The parsing, the
 * dominator tree and the class keys are DevTools' own code (the `heap-snapshot-toolkit`
 * package re-exports it), so the numbers are the ones DevTools would show for the same files.
 */
import { createReadStream } from "node:fs";
import { diff, parse } from "heap-snapshot-toolkit";

/** One class of objects as a snapshot holds it. */
export interface ClassSize {
  /** Constructor name, or V8's name for internal kinds ("(string)", "(compiled code)"). */
  readonly name: string;
  readonly count: number;
  /** Bytes of the objects themselves. */
  readonly selfBytes: number;
  /** Bytes that would be freed with them (DevTools' retained size of the class). */
  readonly retainedBytes: number;
}

/** One class in both snapshots. */
export interface ClassChange {
  readonly name: string;
  readonly before: ClassSize | undefined;
  readonly after: ClassSize | undefined;
  /** Objects of the class allocated after the first snapshot and alive at the second. */
  readonly added: number;
  /** Objects of the class alive at the first snapshot and freed by the second. */
  readonly removed: number;
  /** `after.retainedBytes - before.retainedBytes` (a missing side counts 0). */
  readonly retainedDelta: number;
  /** `after.selfBytes - before.selfBytes`. */
  readonly selfDelta: number;
}

/** A snapshot's totals, as DevTools' Statistics view gives them. */
export interface SnapshotTotals {
  readonly totalBytes: number;
  readonly codeBytes: number;
  readonly stringBytes: number;
  readonly jsArrayBytes: number;
  readonly systemBytes: number;
  readonly nativeBytes: number;
}

type Snapshot = Awaited<ReturnType<typeof parse>>;

const read = (file: string) => parse(createReadStream(file, "utf8"));

function classes(snapshot: Snapshot): Map<string, ClassSize> {
  const byKey = new Map<string, ClassSize>();
  for (const [key, aggregate] of Object.entries(snapshot.aggregatesWithFilter({} as never))) {
    byKey.set(key, {
      name: aggregate.name,
      count: aggregate.count,
      selfBytes: aggregate.self,
      retainedBytes: aggregate.maxRet,
    });
  }
  return byKey;
}

function totals(snapshot: Snapshot): SnapshotTotals {
  const statistics = snapshot.getStatistics();
  return {
    totalBytes: statistics.total,
    codeBytes: statistics.v8heap.code,
    stringBytes: statistics.v8heap.strings,
    jsArrayBytes: statistics.v8heap.jsArrays,
    systemBytes: statistics.v8heap.system,
    nativeBytes: statistics.native.total,
  };
}

/** What {@link compareSnapshots} answers. */
export interface SnapshotComparison {
  readonly before: SnapshotTotals;
  readonly after: SnapshotTotals;
  /** Every class in either snapshot, the largest growth of retained size first. */
  readonly changes: readonly ClassChange[];
}

/**
 * Compares the snapshot in `beforeFile` with the one in `afterFile`, both taken of the same
 * process (object ids carry over between them, which the counts of added and freed objects
 * rest on). Classes are told apart by DevTools' key: the constructor's name and where it is
 * defined.
 */
export async function compareSnapshots(beforeFile: string, afterFile: string): Promise<SnapshotComparison> {
  const first = await read(beforeFile);
  const second = await read(afterFile);
  const [before, after] = [classes(first), classes(second)];
  const moved = (await diff(first, second)) as Record<string, { addedCount: number; removedCount: number }>;
  const changes = [...new Set([...before.keys(), ...after.keys()])].map((key): ClassChange => {
    const [was, is] = [before.get(key), after.get(key)];
    return {
      name: (is ?? was)?.name ?? key,
      before: was,
      after: is,
      added: moved[key]?.addedCount ?? 0,
      removed: moved[key]?.removedCount ?? 0,
      retainedDelta: (is?.retainedBytes ?? 0) - (was?.retainedBytes ?? 0),
      selfDelta: (is?.selfBytes ?? 0) - (was?.selfBytes ?? 0),
    };
  });
  changes.sort((a, b) => b.retainedDelta - a.retainedDelta);
  return { before: totals(first), after: totals(second), changes };
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
const signed = (bytes: number) => `${bytes >= 0 ? "+" : "−"}${kib(Math.abs(bytes))}`;

/**
 * The comparison as Markdown: the totals, then the `rows` classes whose retained size grew most
 * and the `rows` whose own size grew most (a class that grows by many small objects shows in the
 * second even when another class retains them).
 */
export function comparisonMarkdown(comparison: SnapshotComparison, rows = 15): string {
  const { before, after } = comparison;
  const row = (change: ClassChange) =>
    `| ${change.name.replaceAll("|", "\\|").slice(0, 60)} | ${change.before?.count ?? 0} → ${change.after?.count ?? 0} | ` +
    `+${change.added} / −${change.removed} | ${kib(change.before?.selfBytes ?? 0)} → ${kib(change.after?.selfBytes ?? 0)} | ` +
    `${kib(change.before?.retainedBytes ?? 0)} → ${kib(change.after?.retainedBytes ?? 0)} (${signed(change.retainedDelta)}) |`;
  const header = [
    "| class | objects | allocated / freed between | own size | retained size |",
    "|---|---|---|---|---|",
  ];
  const bySelf = [...comparison.changes].sort((a, b) => b.selfDelta - a.selfDelta);
  return [
    "| | before | after |",
    "|---|---|---|",
    `| total | ${kib(before.totalBytes)} | ${kib(after.totalBytes)} |`,
    `| code | ${kib(before.codeBytes)} | ${kib(after.codeBytes)} |`,
    `| strings | ${kib(before.stringBytes)} | ${kib(after.stringBytes)} |`,
    `| JS arrays | ${kib(before.jsArrayBytes)} | ${kib(after.jsArrayBytes)} |`,
    `| system | ${kib(before.systemBytes)} | ${kib(after.systemBytes)} |`,
    `| native (typed arrays, external strings) | ${kib(before.nativeBytes)} | ${kib(after.nativeBytes)} |`,
    "",
    "Largest growth of retained size:",
    "",
    ...header,
    ...comparison.changes.slice(0, rows).map(row),
    "",
    "Largest growth of own size:",
    "",
    ...header,
    ...bySelf.slice(0, rows).map(row),
    "",
  ].join("\n");
}

/**
 * One snapshot's `rows` classes that retain most, as Markdown, with its totals. Retained sizes
 * nest (a cache retains its entries, whose class is listed too), so the rows do not add up.
 */
export async function summaryMarkdown(file: string, rows = 30): Promise<string> {
  const snapshot = await read(file);
  const all = totals(snapshot);
  const largest = [...classes(snapshot).values()]
    .sort((a, b) => b.retainedBytes - a.retainedBytes)
    .slice(0, rows);
  return [
    `Total ${kib(all.totalBytes)}: code ${kib(all.codeBytes)}, strings ${kib(all.stringBytes)}, ` +
      `JS arrays ${kib(all.jsArrayBytes)}, system ${kib(all.systemBytes)}, native ${kib(all.nativeBytes)}.`,
    "",
    "| class | objects | own size | retained size |",
    "|---|---|---|---|",
    ...largest.map(
      (size) =>
        `| ${size.name.replaceAll("|", "\\|").slice(0, 60)} | ${size.count} | ${kib(size.selfBytes)} | ${kib(size.retainedBytes)} |`,
    ),
    "",
  ].join("\n");
}
