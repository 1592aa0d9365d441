import { allCases } from "./cases/all-cases.js";
import { ApiClient } from "./http/api-client.js";
import type { ConformanceOptions } from "./parse-arguments.js";
import { Mismatch } from "./runner/mismatch.js";
import { type ConformanceReport, runCases, summaryLine } from "./runner/run-cases.js";
import { Fixture } from "./support/fixture.js";
import { TokenForge } from "./support/token-forge.js";

/** Where a run writes, and how it is asked to stop early. */
export interface RunConformanceIo {
  /** Receives the report one line at a time; the last line is {@link summaryLine}. */
  readonly write: (line: string) => void;
  /** Asked between cases: true skips the remaining ones (cleanup still runs). */
  readonly stopRequested?: () => boolean;
}

/**
 * Runs every case against the deployment at `options.baseUrl`, one at a time, then deletes the
 * users the run made (which removes their posts), and writes the summary line last. When the
 * deployment does not answer at all, that is one failure and no case runs. Resolves with the
 * counts; never rejects for a failing case.
 */
export async function runConformance(
  options: ConformanceOptions,
  io: RunConformanceIo,
): Promise<ConformanceReport> {
  const api = new ApiClient(options.baseUrl);
  const fixture = new Fixture(api);
  const forge =
    options.jwtSecret === undefined ? undefined : new TokenForge(options.jwtSecret, options.jwtIssuer);
  io.write(`posts conformance against ${options.baseUrl.origin}`);
  // One clear line rather than a hundred identical failures when nothing answers there.
  try {
    await api.get("/api/v1/posts?size=1");
  } catch (error) {
    const report: ConformanceReport = { passed: 0, failed: 1, skipped: [] };
    io.write(`\nThe deployment does not answer: ${error instanceof Mismatch ? error.actual : String(error)}`);
    io.write("");
    io.write(summaryLine(report));
    return report;
  }
  let report: ConformanceReport;
  try {
    report = await runCases(allCases, {
      api,
      fixture,
      options,
      forge,
      write: io.write,
      ...(io.stopRequested === undefined ? {} : { stopRequested: io.stopRequested }),
    });
  } finally {
    const problems = await fixture.cleanup();
    if (problems.length > 0) {
      io.write("\nCleanup left these users behind:");
      for (const problem of problems) io.write(`  - ${problem}`);
    }
  }
  io.write("");
  io.write(summaryLine(report));
  return report;
}
