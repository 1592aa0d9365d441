import type { ApiClient } from "../http/api-client.js";
import type { ConformanceOptions } from "../parse-arguments.js";
import type { Fixture } from "../support/fixture.js";
import type { TokenForge } from "../support/token-forge.js";
import type { CaseContext, ConformanceCase } from "./conformance-case.js";
import { Mismatch } from "./mismatch.js";

/** How a run went. */
export interface ConformanceReport {
  readonly passed: number;
  readonly failed: number;
  /** The cases not run, each with the reason. */
  readonly skipped: readonly { readonly title: string; readonly reason: string }[];
}

/** What {@link runCases} needs besides the cases. */
export interface RunContext {
  readonly api: ApiClient;
  readonly fixture: Fixture;
  readonly options: ConformanceOptions;
  /** The forge with the deployment's key, when the secret was given. */
  readonly forge: TokenForge | undefined;
  /** Receives the report, one line at a time. */
  readonly write: (line: string) => void;
  /** Asked between cases; when it answers true the remaining cases are not run (Ctrl-C). */
  readonly stopRequested?: () => boolean;
}

const CASE_TIMEOUT_MS = 180_000;

// Why a runner of our own rather than node:test: the suite ships as a command that must end with
// exactly one line "N passed, M failed[, K skipped]", list each skipped case with its reason, and
// print a failure as what was checked, expected and got. node:test's run() loads test files in
// child processes and its reporters print their own summaries, so we would rewrite its output
// anyway; a sequential loop over plain objects is about sixty lines and keeps the order, the
// shared fixture and the final cleanup obvious.

/** The closing line: `N passed, M failed`, with `, K skipped` when cases were skipped. */
export function summaryLine(report: ConformanceReport): string {
  const skipped = report.skipped.length;
  return `${report.passed} passed, ${report.failed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`;
}

/**
 * Runs the cases one after another, in order, and writes a line per case as it ends, then every
 * failure in full (what was checked, expected, and what came back), the skipped cases with the
 * reason, and last the summary line. One at a time on purpose: cases share the deployment's
 * throttles and a case's timing must not depend on its neighbours.
 */
export async function runCases(
  cases: readonly ConformanceCase[],
  run: RunContext,
): Promise<ConformanceReport> {
  const { write } = run;
  const failures: { title: string; error: unknown }[] = [];
  const skipped: { title: string; reason: string }[] = [];
  let passed = 0;
  let section: string | undefined;

  for (const conformanceCase of cases) {
    const title = `${conformanceCase.section} › ${conformanceCase.name}`;
    if (conformanceCase.section !== section) {
      section = conformanceCase.section;
      write(`\n${section}`);
    }
    if (run.stopRequested?.() === true) {
      skipped.push({ title, reason: "the run was interrupted" });
      continue;
    }
    if (conformanceCase.needsSecret === true && run.forge === undefined) {
      skipped.push({ title, reason: "forges tokens: needs --jwt-secret" });
      write(`  skip  ${conformanceCase.name} (needs --jwt-secret)`);
      continue;
    }
    try {
      await withTimeout(conformanceCase.run(contextFor(conformanceCase, run)), CASE_TIMEOUT_MS);
      passed += 1;
      write(`  ok    ${conformanceCase.name}`);
    } catch (error) {
      failures.push({ title, error });
      write(`  FAIL  ${conformanceCase.name}`);
    }
  }

  if (failures.length > 0) {
    write("\nFailures:");
    failures.forEach(({ title, error }, index) => {
      write(`\n${index + 1}) ${title}`);
      for (const line of describeFailure(error)) write(`   ${line}`);
    });
  }
  if (skipped.length > 0) {
    write("\nSkipped:");
    for (const { title, reason } of skipped) write(`  - ${title} (${reason})`);
  }
  return { passed, failed: failures.length, skipped };
}

function contextFor(conformanceCase: ConformanceCase, run: RunContext): CaseContext {
  const { api, fixture, options, forge } = run;
  return {
    api,
    fixture,
    options,
    get forge(): TokenForge {
      if (forge === undefined || conformanceCase.needsSecret !== true) {
        throw new Error("a case that forges tokens must declare needsSecret");
      }
      return forge;
    },
  };
}

function describeFailure(error: unknown): string[] {
  if (error instanceof Mismatch) {
    return [
      `what:     ${error.what}`,
      `expected: ${indent(error.expected)}`,
      `got:      ${indent(error.actual)}`,
    ];
  }
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return [`unexpected error: ${error.message}${cause}`];
  }
  return [`unexpected error: ${String(error)}`];
}

function indent(text: string): string {
  return text.replace(/\n/g, "\n             ");
}

async function withTimeout(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the case did not finish within ${ms / 1000} s`)), ms);
  });
  try {
    await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
