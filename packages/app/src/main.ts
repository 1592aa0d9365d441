import { loadConfig } from "./config.js";
import { createLogger } from "./create-logger.js";
import { tracingWanted } from "./tracing/tracing-wanted.js";

const USAGE = `Usage: node packages/app/dist/main.js [command]

Commands:
  start     serve the API (the default)
  migrate   bring the database schema up to date, then exit
  help      show this text

Configuration comes from environment variables; see the README.`;

/**
 * The command line: `main.js [start]` serves until SIGTERM or SIGINT, `main.js migrate` runs
 * the migrations and exits 0. A configuration problem stops either before anything is opened,
 * with every problem listed on stderr and exit code 1; an unknown command exits 2.
 */
async function main(args: readonly string[]): Promise<void> {
  const command = args[0] ?? "start";
  if (command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command !== "start" && command !== "migrate") {
    console.error(`posts: unknown command "${command}".\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }

  const loaded = loadConfig(process.env);
  const traces = tracingWanted(process.env);
  if (!loaded.ok || !traces.ok) {
    // Plain text on stderr: this is read by a person at a terminal or in a deploy log.
    const problems = [...(loaded.ok ? [] : loaded.error), ...(traces.ok ? [] : traces.error)];
    const list = problems.map((problem) => `  - ${problem}`).join("\n");
    console.error(`posts: refusing to start; the configuration has problems:\n${list}`);
    process.exitCode = 1;
    return;
  }
  const config = loaded.value;
  const logger = createLogger(config.LOG_LEVEL);
  // Loaded only now, so that help and configuration errors answer without loading the
  // database drivers and the web stack.
  if (command === "migrate") {
    const { migrate } = await import("./migrate.js");
    process.exitCode = await migrate(config, logger);
    return;
  }
  // With traces off, OpenTelemetry is never loaded: no patched module, no hook, no cost. With
  // them on, it starts before serve.js loads pg and builds Fastify, which it must see first.
  const tracing = traces.value ? (await import("./tracing/start-tracing.js")).startTracing() : undefined;
  const { serve } = await import("./serve.js");
  await serve(config, logger, { tracing });
}

await main(process.argv.slice(2));
