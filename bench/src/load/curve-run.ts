import { existsSync } from "node:fs";
import os from "node:os";
import type { CurveResults, CurveScenarioRuns } from "../measure/charts.js";
import { CURVE_SCENARIOS, renderPairedCurve } from "../measure/curve.js";
import type { TimeTo20 } from "../measure/report.js";
import { type Options, sizeLabel } from "../options.js";
import { freePorts, type ServerProcess, startServer } from "../servers/server-process.js";
import type { TokenSettings } from "../servers/tokens.js";
import {
  BASELINE_MAIN,
  type Contestant,
  keep,
  log,
  logFile,
  makeFixture,
  measureRounds,
  newTokenSettings,
  printTimeTo20,
  runLine,
  SERVICE_MAIN,
  serverDatabaseUrl,
  serverEnv,
  serviceArgs,
  since,
  stopAllOnExit,
} from "./harness.js";
import { type Fixture, SCENARIOS, type Scenario } from "./scenarios.js";
import { measureTimeTo20, searchPopulation } from "./search-population.js";
import { type SeededDatabase, seededDatabase, warmDatabase } from "./seeded-database.js";

/**
 * One table size of the curve: its database, the service and the baseline running on it, and
 * what its scenarios know of it.
 */
interface Side {
  readonly database: SeededDatabase;
  readonly server: ServerProcess;
  readonly baseline: ServerProcess;
  readonly fixture: Fixture;
}

/**
 * `pnpm bench -- --curve`: how the service's latency grows with the table, in one run.
 * Seeds (or with --reuse-database reuses) the bench database and a larger one beside it, starts
 * the service and the baseline on each, and measures each scenario of {@link CURVE_SCENARIOS}
 * (those of `--only`) with the four as contestants of the same rounds, in alternating slices, as
 * a run measures the service against the baseline: the curve from two runs twenty minutes apart
 * moved with the machine as much as with the table (bench/RESULTS.md), and the baseline's growth,
 * shown beside the service's, says what the same statements cost more on the larger table.
 * Prints each round, then the curve and its verdicts, and keeps the rounds in bench/results/.
 */
export async function runCurve(options: Options): Promise<void> {
  if (!existsSync(SERVICE_MAIN))
    throw new Error(`${SERVICE_MAIN} is missing: build the service first (pnpm run build)`);
  const scenarios = curveScenarios(options.only);
  const tokens = newTokenSettings();
  const servers: ServerProcess[] = [];
  const stopAll = stopAllOnExit(servers);
  const databases: SeededDatabase[] = [];
  try {
    databases.push(await seededDatabase(options, options.database, options.posts, tokens));
    databases.push(await seededDatabase(options, options.curveDatabase, options.curvePosts, tokens));
    // Read in once both are seeded, since seeding the larger pushes the smaller out of the cache.
    for (const database of databases) await warmDatabase(database);
    const ports = await freePorts(databases.length * 2);
    const sides: Side[] = [];
    for (const [i, database] of databases.entries()) {
      const server = await startOn(database, "service", ports[2 * i], options, tokens);
      servers.push(server);
      const baseline = await startOn(database, "baseline", ports[2 * i + 1], options, tokens);
      servers.push(baseline);
      sides.push({
        database,
        server,
        baseline,
        fixture: makeFixture({ ...options, posts: database.posts }, tokens),
      });
    }
    log(servers.map((s) => `${s.name} pid ${s.pid} at ${s.url}`).join(", "));

    // The terms of each size followed to their first twenty matches, one at a time, each
    // service alone, before the scenarios write posts at the newest end, where every search
    // starts (once unmeasured, to compile the code and read the pages into PostgreSQL's buffers):
    // what a search box waits for as the table grows.
    const [small, large] = sides as [Side, Side];
    const bySize = [
      ["small", small],
      ["large", large],
    ] as const;
    const timeTo20 = { small: [] as TimeTo20[], large: [] as TimeTo20[] };
    for (const [size, side] of bySize) {
      const terms = await searchPopulation(side.database.client, side.database.posts);
      await measureTimeTo20(side.server.url, terms);
      timeTo20[size] = await measureTimeTo20(side.server.url, terms);
    }
    const measuring = performance.now();
    const loadBefore = os.loadavg()[0] ?? 0;
    const runs: CurveScenarioRuns[] = [];
    for (const scenario of scenarios) runs.push(await measureCurveScenario(scenario, sides, options));
    const load = `load average ${loadBefore.toFixed(2)} → ${(os.loadavg()[0] ?? 0).toFixed(2)}`;
    const sizes = { small: sizeOf(small), large: sizeOf(large) };
    const heading =
      `The curve on PostgreSQL: the service on ${sizes.small.posts.toLocaleString("en-US")} and ` +
      `${sizes.large.posts.toLocaleString("en-US")} posts in the same rounds`;
    const what =
      `${options.posts} and ${options.curvePosts} posts / ${options.users} users · ` +
      `${options.connections} connections (searches ${options.searchConnections})`;
    console.log(`\n## ${heading}\n\n${runLine(options, what, `measured in ${since(measuring)}, ${load}`)}\n`);
    const results: CurveResults = {
      heading,
      date: new Date().toISOString(),
      options,
      node: process.version,
      sizes,
      runs,
    };
    console.log(renderPairedCurve(results));
    for (const [size, side] of bySize) {
      printTimeTo20(timeTo20[size], `the service on ${side.database.posts} posts, one term at a time`);
    }
    await keep({ ...results, timeTo20 });
  } finally {
    await stopAll();
    await Promise.all(databases.map((database) => database.client.end()));
  }
}

/** The scenarios of the curve `only` names (all of them when empty); throws on one not in the curve. */
function curveScenarios(only: readonly string[]): Scenario[] {
  const foreign = only.filter((name) => !CURVE_SCENARIOS.includes(name));
  if (foreign.length > 0)
    throw new Error(
      `not a scenario of the curve: ${foreign.join(", ")} (it has ${CURVE_SCENARIOS.join(", ")})`,
    );
  return SCENARIOS.filter(
    (scenario) =>
      CURVE_SCENARIOS.includes(scenario.name) && (only.length === 0 || only.includes(scenario.name)),
  );
}

/**
 * The service or the baseline on `database`, named after its size (service-1m, baseline-1m),
 * with its own application_name there, by which its backends' CPU is measured.
 */
function startOn(
  database: SeededDatabase,
  kind: "service" | "baseline",
  port: number | undefined,
  options: Options,
  tokens: TokenSettings,
): Promise<ServerProcess> {
  const name = `${kind}-${sizeLabel(database.posts)}`;
  const env = {
    ...serverEnv(tokens, database.url),
    PORT: String(port),
    DATABASE_URL: serverDatabaseUrl(database.url, name),
  };
  const args = kind === "service" ? serviceArgs(options.serviceNodeArgs) : [BASELINE_MAIN];
  return startServer(name, args, env, logFile(name));
}

/**
 * One scenario of the curve: each side's workload prepared from its own fixture (a post id, a
 * deep page's cursor, depends on the table's size), the service and the baseline of both sides
 * measured as contestants of the same rounds, each with the CPU of its backends read on its own
 * database: the baseline's growth is what the same statements cost more on the larger table.
 */
async function measureCurveScenario(
  scenario: Scenario,
  sides: readonly Side[],
  options: Options,
): Promise<CurveScenarioRuns> {
  const contestants: Contestant[] = [];
  for (const side of sides) {
    const { workload } = await scenario.prepare(side.fixture, side.server.url);
    for (const server of [side.server, side.baseline])
      contestants.push({ name: server.name, server, workload, database: side.database.client });
  }
  const [small = [], baselineSmall = [], large = [], baselineLarge = []] = await measureRounds(
    scenario.name,
    contestants,
    options,
  );
  return {
    name: scenario.name,
    description: scenario.description,
    small,
    large,
    baseline: { small: baselineSmall, large: baselineLarge },
  };
}

const sizeOf = (side: Side) => ({ server: side.server.name, posts: side.database.posts });
