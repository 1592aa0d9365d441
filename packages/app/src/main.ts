import { loadConfig } from "./config.js";
import { createLogger } from "./create-logger.js";

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
  if (!loaded.ok) {
    // Plain text on stderr: this is read by a person at a terminal or in a deploy log.
    const list = loaded.error.map((problem) => `  - ${problem}`).join("\n");
    console.error(`posts: refusing to start; the configuration has problems:\n${list}`);
    process.exitCode = 1;
    return;
  }
  const config = loaded.value;
  const logger = createLogger(config.logLevel);
  // Loaded only now, so that help and configuration errors answer without loading the
  // database drivers and the web stack.
  if (command === "migrate") {
    const { migrate } = await import("./migrate.js");
    process.exitCode = await migrate(config, logger);
  } else {
    const { serve } = await import("./serve.js");
    await serve(config, logger);
  }
}

await main(process.argv.slice(2));
