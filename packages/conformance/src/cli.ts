#!/usr/bin/env node
import { parseArguments, USAGE } from "./parse-arguments.js";
import { runConformance } from "./run-conformance.js";

// The command: posts-conformance --base-url http://host:8080 [--jwt-secret …]. Exit 0 when no case
// failed, 1 when one did (or the run itself broke), 2 on a usage error.
const parsed = parseArguments(process.argv.slice(2));
if (parsed.kind === "help") {
  process.stdout.write(USAGE);
} else if (parsed.kind === "error") {
  process.stderr.write(`posts-conformance: ${parsed.message}\n\n${USAGE}`);
  process.exitCode = 2;
} else {
  let interrupted = false;
  // The first Ctrl-C finishes the current case and cleans up; a second one exits at once.
  process.once("SIGINT", () => {
    interrupted = true;
    process.stderr.write(
      "\ninterrupted: finishing the current case, then cleaning up (Ctrl-C again to quit now)\n",
    );
    process.once("SIGINT", () => process.exit(130));
  });
  try {
    const report = await runConformance(parsed.options, {
      write: (line) => process.stdout.write(`${line}\n`),
      stopRequested: () => interrupted,
    });
    process.exitCode = report.failed > 0 || interrupted ? 1 : 0;
  } catch (error) {
    process.stderr.write(`posts-conformance: the run broke: ${(error as Error).stack ?? String(error)}\n`);
    process.stdout.write("0 passed, 1 failed\n");
    process.exitCode = 1;
  }
}
