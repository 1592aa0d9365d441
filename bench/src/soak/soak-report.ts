import { readFileSync } from "node:fs";
import type { LeakAnalysis, LoadAnalysis, MemoryTrend } from "./soak-analysis.js";

/** The heading of the report's hand-written part, which every run keeps as it is. */
const NOTES_HEADING = "## Notes (written by hand, kept by every run)";

/** The hand-written notes of the report at `file`, from their heading on; "" when there are none. */
export function keptNotes(file: string): string {
  try {
    const text = readFileSync(file, "utf8");
    const at = text.indexOf(NOTES_HEADING);
    return at === -1 ? "" : text.slice(at);
  } catch {
    return "";
  }
}

/** A check's outcome; "inconclusive" when the run could not show either way (it does not fail the run). */
export type CheckVerdict = "pass" | "fail" | "inconclusive";

/** Everything one soak run measured, as soak.ts collects it. */
export interface SoakResult {
  readonly command: string;
  readonly date: string;
  readonly machine: string;
  readonly settings: Readonly<Record<string, string | number>>;
  readonly load: LoadAnalysis;
  readonly rss: MemoryTrend;
  /** V8's heap in use, from /metrics, garbage included. */
  readonly heap: MemoryTrend;
  /** The heap after forced full collections, net of the caches: the memory verdict's numbers. */
  readonly leak: LeakAnalysis;
  readonly afterwards: {
    readonly readyStatus: number;
    readonly burstSucceeded: number;
    readonly burstSize: number;
  };
  readonly writes: {
    readonly acknowledgedCreates: number;
    readonly missingCreates: readonly number[];
    readonly patchedPosts: number;
    /** Posts whose stored updatedAt is older than one a 200 acknowledged. */
    readonly lostUpdates: readonly number[];
  };
  readonly shutdown: {
    /** The service had exited by itself before the soak sent SIGTERM. */
    readonly crashed: boolean;
    readonly code: number | null;
    readonly signal: string | null;
    readonly ms: number;
  };
  readonly checks: readonly {
    readonly name: string;
    readonly verdict: CheckVerdict;
    readonly detail: string;
  }[];
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const ms = (value: number) => (Number.isFinite(value) ? `${Math.round(value)} ms` : "–");

/**
 * The Markdown report of a run: what was run, where, and every number, with a verdict per check,
 * followed by `notes` (see {@link keptNotes}).
 */
export function soakReport(result: SoakResult, notes = ""): string {
  const { load, rss, heap, writes } = result;
  const lines = [
    "# Soak: mixed load across PostgreSQL restarts",
    "",
    "Written by `bench/src/soak.ts` after a real run: everything above the Notes is replaced by",
    "the next run. Raw records, memory samples and the service's log of each run are kept under",
    "`bench/results/` (not committed).",
    "",
    `- Command: \`${result.command}\``,
    `- Date: ${result.date}`,
    `- Machine: ${result.machine}`,
    "",
    "## What it does",
    "",
    "1. Drops and creates the database `posts_soak`, starts the built service",
    "   (`node packages/app/dist/main.js`) on it, registers one user per client and gives each a",
    "   few posts.",
    "2. A separate process runs a closed-loop mix for the whole duration: 35% page reads,",
    "   10% searches (`q`, one in five for a term no post holds), 20% reads by id, 20% creates",
    "   (one in four with an `Idempotency-Key`, sent a second time as a retry), 15% PATCHes of",
    "   the client's own posts. Every request is recorded with its times, status and, for a 201,",
    "   the id its `Location` names. Beside the clients, two followers of the change feed",
    "   (`GET /api/v1/posts/events`) read it from event 1: a Server-Sent Events stream dropped",
    "   after 5 to 30 s each time and resumed with `Last-Event-ID`, and a reader of JSON pages",
    "   (`?after=&limit=1000`); each checks that every number follows the last.",
    "3. Meanwhile PostgreSQL itself is restarted (once in the middle, or several times spread",
    "   evenly): `pg_ctlcluster stop` (fast mode: every session is terminated), a pause with the",
    "   server down, `pg_ctlcluster start`.",
    "4. Throughout, the service's heap is read after full collections forced through its inspector",
    "   (started with `--inspect=127.0.0.1:0`), beside the post cache's `post_cache_bytes`. The",
    "   memory verdict judges the readings after a fifth of the run or, once the post cache has",
    "   reached its bound, after twice the time it took to get there, whichever is later (its",
    "   estimate is constant from there, what its entries retain settles only once it has turned",
    "   over).",
    "5. Afterwards: both feed followers read to the end; /ready, a burst of requests, every",
    "   acknowledged create and PATCH looked up in the database, every acknowledged create's",
    "   `post.created` looked for among the events both followers saw, and SIGTERM.",
    "",
    "## Settings",
    "",
    "| setting | value |",
    "|---|---|",
    ...Object.entries(result.settings).map(([name, value]) => `| ${name} | ${value} |`),
    "",
    "## Verdict",
    "",
    "| check | result | detail |",
    "|---|---|---|",
    ...result.checks.map(
      (check) =>
        `| ${check.name} | ${check.verdict === "fail" ? "**FAIL**" : check.verdict} | ${check.detail} |`,
    ),
    "",
    "## Numbers",
    "",
    "### Load",
    "",
    `- ${load.requests} requests in ${(load.durationMs / 1000).toFixed(1)} s: ${load.perSecond.toFixed(0)} per second.`,
    `- By operation: ${Object.entries(load.byOperation)
      .map(([op, count]) => `${op} ${count}`)
      .join(", ")}.`,
    `- By status: ${Object.entries(load.byStatus)
      .sort(([a], [b]) => Number(a) - Number(b))
      .map(([status, count]) => `${status} × ${count}`)
      .join(", ")} (0 = no answer, -1 = client timeout).`,
    "",
    "| phase | requests | p50 | p99 | max |",
    "|---|---|---|---|---|",
    ...(["before", "during", "after"] as const).map((phase) => {
      const latency = load.latency[phase];
      const name = {
        before: "before the first restart",
        during: "during outages",
        after: "between and after outages",
      }[phase];
      return `| ${name} | ${latency.requests} | ${ms(latency.p50)} | ${ms(latency.p99)} | ${ms(latency.max)} |`;
    }),
    "",
    "### The restarts",
    "",
    "Recovered: from `pg_ctlcluster start` returning to the last failure (negative: the service",
    "was answering again before the command had finished, as the server accepts connections first).",
    "",
    "| # | stop command | down | start command | non-2xx | error window | recovered | 2xx after |",
    "|---|---|---|---|---|---|---|---|",
    ...load.outages.map(({ restart, failures, window }, index) => {
      const cells = [
        index + 1,
        ms(restart.stoppedAt - restart.stopAt),
        ms(restart.startAt - restart.stoppedAt),
        ms(restart.startedAt - restart.startAt),
        failures,
        window === undefined ? "–" : `${ms(window.durationMs)} from +${ms(window.firstAfterStopMs)}`,
        window === undefined ? "–" : ms(window.lastAfterStartMs),
        window === undefined ? "–" : window.successesAfter,
      ];
      return `| ${cells.join(" | ")} |`;
    }),
    "",
    `- Non-2xx answers: ${load.failures}, of which unexpected (a 5xx other than 503, no answer, ` +
      `a timeout): ${load.unexpected}; before the first restart: ${load.failuresBeforeRestarts}; to requests ` +
      `in flight while a heap snapshot stopped the service: ${load.failuresDuringPauses}.`,
    `- Afterwards: /ready ${result.afterwards.readyStatus}; ${result.afterwards.burstSucceeded} of ` +
      `${result.afterwards.burstSize} concurrent requests 2xx.`,
    "",
    "### Memory (RSS of the service, sampled every second)",
    "",
    "![RSS and V8 heap over the run](soak-memory.svg)",
    "",
    `- RSS after the warm-up and the warm snapshot: ${rss.samples} samples, from ${mib(rss.minBytes)} to ${mib(rss.maxBytes)}.`,
    `- Largest in its first quarter: ${mib(rss.firstQuarterMaxBytes)}; in its last quarter: ` +
      `${mib(rss.lastQuarterMaxBytes)} (ratio ${rss.ratio.toFixed(2)}).`,
    `- V8 heap in use, garbage included (from /metrics): ${heap.samples} samples, ${mib(heap.minBytes)} to ${mib(heap.maxBytes)}.`,
    `- After forced full collections, net of the post cache: ${result.leak.readings} readings after the warm-up, ` +
      `median of the first quarter ${mib(result.leak.baselineBytes)}, of the last ${mib(result.leak.finalBytes)}, ` +
      `growth ${mib(result.leak.growthBytes)} (allowed ${mib(result.leak.allowedBytes)}), least-squares slope ` +
      `${mib(result.leak.slopeBytesPerHour)} per hour; the post cache held ${mib(result.leak.cacheFirstBytes)} at the ` +
      `first of them and ${mib(result.leak.cacheLastBytes)} at the last.`,
    "",
    "### Acknowledged writes",
    "",
    `- Creates answered 201: ${writes.acknowledgedCreates}; missing from the database: ` +
      `${writes.missingCreates.length}${writes.missingCreates.length === 0 ? "" : ` (${writes.missingCreates.join(", ")})`}.`,
    `- Posts with a PATCH answered 200: ${writes.patchedPosts}; stored updatedAt older than an ` +
      `acknowledged one: ${writes.lostUpdates.length}.`,
    "",
    "### Shutdown",
    "",
    result.shutdown.crashed
      ? `- The service had exited by itself (code ${result.shutdown.code}) before the run ended: no SIGTERM was sent.`
      : `- SIGTERM after the run: exit code ${result.shutdown.code}${
          result.shutdown.signal === null ? "" : ` (signal ${result.shutdown.signal})`
        } after ${ms(result.shutdown.ms)}.`,
    "",
  ];
  const report = lines.join("\n");
  return notes === "" ? report : `${report}\n${notes}`;
}
