import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const FIXTURE = fileURLToPath(new URL("./describe-needing/", import.meta.url));
const VITEST = join(dirname(createRequire(import.meta.url).resolve("vitest/package.json")), "vitest.mjs");

interface Report {
  readonly numPassedTests: number;
  readonly numFailedTests: number;
  readonly numPendingTests: number;
  readonly testResults: readonly {
    readonly assertionResults: readonly { readonly fullName: string; readonly status: string }[];
  }[];
}

/** Runs the fixture's suites in a vitest of their own, with `CI` as given, and answers its JSON report. */
async function runFixture(ci: string): Promise<Report> {
  // This run's own variables (VITEST, VITEST_POOL_ID…) would make the inner vitest think it is a worker.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("VITEST")));
  const run = promisify(execFile)(process.execPath, [VITEST, "run", "--reporter=json"], {
    cwd: FIXTURE,
    env: { ...env, CI: ci },
  });
  // A failing inner run exits non-zero; its report is what is checked.
  const { stdout } = await run.catch((error: { stdout: string }) => ({ stdout: error.stdout }));
  return JSON.parse(stdout.slice(stdout.indexOf("{"))) as Report;
}

const outcomes = (report: Report) =>
  report.testResults.flatMap((file) =>
    file.assertionResults.map((test) => `${test.status}: ${test.fullName}`),
  );

describe("describeNeeding", () => {
  it("runs a suite whose prerequisites are there, and skips one that lacks any, saying what and how, outside CI", async () => {
    const report = await runFixture("");
    expect(outcomes(report).sort()).toEqual([
      "passed: a suite whose server is there runs",
      "skipped: a suite whose second server is missing (skipped: needs a missing server; install it) would run",
      "skipped: a suite whose second server is missing (skipped: needs a missing server; install it) would run too",
    ]);
  }, 60_000);

  it("fails a suite that lacks a prerequisite under CI=true, with one test naming what is missing", async () => {
    const report = await runFixture("true");
    expect(outcomes(report).sort()).toEqual([
      "failed: a suite whose second server is missing has a missing server",
      "passed: a suite whose server is there runs",
    ]);
    expect(report.numPendingTests).toBe(0);
  }, 60_000);
});
