/** What the PostgreSQL run, the embedded run and the curve share: servers' environment, rounds, output. */
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { SERVICE_NODE_FLAGS } from "@posts/app/node-flags";
import type pg from "pg";
import { type BackendCpu, backendCpuBetween, readBackendCpu } from "../measure/backend-cpu.js";
import { type BenchResults, resultsChartSvg, runDate } from "../measure/charts.js";
import {
  judge,
  type Round,
  render,
  renderTimeTo20,
  renderVerdicts,
  type ScenarioRuns,
  type TimeTo20,
} from "../measure/report.js";
import { CLOSED_LOOP_CONNECTIONS, type Options } from "../options.js";
import { cpuSeconds, type ServerProcess, sampleMaxRss, tail } from "../servers/server-process.js";
import { signToken, type TokenSettings } from "../servers/tokens.js";
import { SEED_PASSWORD, seedEmail } from "./database.js";
import { combine, drive, type Slice, type Workload } from "./load.js";
import { closedLoopScenarios, type Fixture, probeWorkload, SCENARIOS, type Scenario } from "./scenarios.js";

export const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const SERVICE_MAIN = `${ROOT}packages/app/dist/main.js`;

/**
 * The arguments of `node` that run the built service as it is deployed: its own flags
 * (`SERVICE_NODE_FLAGS`, as `pnpm start` and the container image pass them), then `extra` (which
 * may override them: V8 takes a flag's last value), then its main module.
 */
export function serviceArgs(extra: readonly string[] = []): string[] {
  return [...SERVICE_NODE_FLAGS, ...extra, SERVICE_MAIN];
}
export const BASELINE_MAIN = fileURLToPath(new URL("../servers/baseline-server.js", import.meta.url));
export const EXPRESS_MAIN = fileURLToPath(new URL("../servers/express-server.js", import.meta.url));
/** The service's default pool size (DB_POOL_SIZE); the reference servers get the same. */
const POOL_SIZE = 10;
/** Registered through the service so that every seeded user gets a hash made by its own hasher. */
export const HASH_SOURCE_EMAIL = "hash-source@bench.test";

/** Names this run's files in bench/results/: the raw rounds (.json) and the servers' logs. */
const RUN_ID = new Date().toISOString().replace(/[:.]/g, "-");
const RESULTS_DIR = `${ROOT}bench/results`;

/** Where server `name`'s stdout and stderr go during this run. */
export function logFile(name: string): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  return `${RESULTS_DIR}/${RUN_ID}-${name}.log`;
}

export const log = (message: string) => console.log(`[bench] ${message}`);
export const since = (start: number) => `${((performance.now() - start) / 1000).toFixed(1)} s`;

/** A fresh signing key per run: the harness mints tokens with it, both servers check them. */
export function newTokenSettings(): TokenSettings {
  return { secret: randomBytes(32).toString("base64url"), issuer: "posts-service", ttlMs: 86_400_000 };
}

/**
 * The environment of both servers: production mode, quiet logs, no migration at start, a
 * login throttle too high to trip (it counts failures; the benchmark's logins all succeed).
 * `databaseUrl` undefined means the service's embedded database under `dataDir`.
 */
export function serverEnv(tokens: TokenSettings, databaseUrl: string | undefined, dataDir?: string) {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOST: "127.0.0.1",
    DB_POOL_SIZE: String(POOL_SIZE),
    JWT_SECRET: tokens.secret,
    JWT_ISSUER: tokens.issuer,
    JWT_TTL_MS: String(tokens.ttlMs),
    LOG_LEVEL: "warn",
    MIGRATE_ON_START: "false",
    NODE_ENV: "production",
    LOGIN_THROTTLE_MAX: "1000000",
  };
  if (databaseUrl !== undefined) env.DATABASE_URL = databaseUrl;
  if (dataDir !== undefined) env.DATA_DIR = dataDir;
  return env;
}

/**
 * Answers a function that stops every server `servers` holds when it is called, and calls it when
 * the bench is stopped by Ctrl-C or by `kill`: the servers are children that would outlive it.
 */
export function stopAllOnExit(servers: readonly ServerProcess[]): () => Promise<void> {
  const stopAll = async () => {
    await Promise.all(servers.map((s) => s.stop()));
  };
  process.once("SIGINT", () => void stopAll().then(() => process.exit(130)));
  process.once("SIGTERM", () => void stopAll().then(() => process.exit(143)));
  return stopAll;
}

/** Unique to this run as well, should another run share the PostgreSQL server. */
const applicationName = (serverName: string) => `bench-${process.pid}-${serverName}`;

/**
 * `databaseUrl` for server `serverName`: its connections carry an `application_name` of their
 * own (`pg` takes the URL's over its default), by which the harness finds the PostgreSQL
 * backends that serve them and measures their CPU.
 */
export function serverDatabaseUrl(databaseUrl: string, serverName: string): string {
  const url = new URL(databaseUrl);
  url.searchParams.set("application_name", applicationName(serverName));
  return url.toString();
}

/** Registers {@link HASH_SOURCE_EMAIL} with {@link SEED_PASSWORD} through the service. */
export async function registerHashSource(serviceUrl: string): Promise<void> {
  const response = await fetch(`${serviceUrl}/api/v1/user`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: HASH_SOURCE_EMAIL, password: SEED_PASSWORD }),
  });
  await response.arrayBuffer();
  if (response.status !== 201) throw new Error(`registering through the service answered ${response.status}`);
}

export function makeFixture(options: Options, tokens: TokenSettings): Fixture {
  return {
    users: options.users,
    posts: options.posts,
    tokens: Array.from({ length: options.users }, (_, i) =>
      signToken(tokens, { id: i + 1, email: seedEmail(i + 1) }),
    ),
    connections: options.connections,
    loginConnections: options.loginConnections,
    searchConnections: options.searchConnections,
  };
}

/** The servers one run measures: the service, and those it is compared with when they run. */
export interface Servers {
  readonly service: ServerProcess;
  readonly baseline?: ServerProcess | undefined;
  readonly express?: ServerProcess | undefined;
}

/**
 * Runs every selected scenario (`--closed-loop`'s alone when it is set) against each of `servers`. With `database`, a client of the
 * PostgreSQL server the servers use, the CPU of the backends serving each one is measured too.
 */
export async function runScenarios(
  options: Options,
  fixture: Fixture,
  servers: Servers,
  database?: pg.Client,
): Promise<ScenarioRuns[]> {
  // --closed-loop's scenarios are its own (get-one-c64 … get-one-c1): --only picks among them.
  const scenarios = options.closedLoop ? closedLoopScenarios(CLOSED_LOOP_CONNECTIONS) : SCENARIOS;
  const unknown = options.only.filter((name) => !scenarios.some((s) => s.name === name));
  if (unknown.length > 0) throw new Error(`unknown scenario(s): ${unknown.join(", ")}`);
  const runs: ScenarioRuns[] = [];
  for (const scenario of scenarios) {
    if (options.only.length > 0 && !options.only.includes(scenario.name)) continue;
    runs.push(await runScenario(scenario, fixture, options, servers, database));
  }
  return runs;
}

/** What one round measures in turn: a server under a workload. */
export interface Contestant {
  readonly name: string;
  readonly server: ServerProcess;
  readonly workload: Workload;
  /**
   * A client of the database the server uses, when it is a PostgreSQL server on this machine: the
   * CPU of the backends serving the server is measured through it, and each slice waits for the
   * server's statements there to end.
   */
  readonly database?: pg.Client | undefined;
}

/**
 * Measures a scenario against each of the servers of `servers` or, for a scenario that measures
 * the service against itself, the service under each of its two workloads (`measureRounds`).
 */
async function runScenario(
  scenario: Scenario,
  fixture: Fixture,
  options: Options,
  { service, baseline, express }: Servers,
  database: pg.Client | undefined,
): Promise<ScenarioRuns> {
  const { workload, reference } = await scenario.prepare(fixture, service.url);
  const probe = scenario.name === "login" ? probeWorkload(fixture, options.probeRate) : undefined;
  const contestants: Contestant[] =
    reference === undefined
      ? [service, baseline, express]
          .filter((s): s is ServerProcess => s !== undefined)
          .map((server) => ({ name: server.name, server, workload, database }))
      : [
          { name: service.name, server: service, workload, database },
          { name: reference.label, server: service, workload: reference.workload, database },
        ];
  const rounds = await measureRounds(scenario.name, contestants, options, probe);
  const roundsOf = (index: number) => rounds[index] ?? [];
  const of = (server: ServerProcess | undefined) =>
    server === undefined ? [] : roundsOf(contestants.findIndex((c) => c.server === server));
  return {
    name: scenario.name,
    description: scenario.description,
    service: roundsOf(0),
    // Against itself: the reference workload's rounds stand where the baseline's would.
    baseline: reference === undefined ? of(baseline) : roundsOf(1),
    express: reference === undefined ? of(express) : [],
    ...(reference === undefined ? {} : { reference: reference.label }),
    ...(workload.expectedStatus === undefined ? {} : { expectedStatus: workload.expectedStatus }),
  };
}

/**
 * Warms each contestant up, then measures the rounds of `scenario` (its name), and answers each
 * contestant's rounds, in the order of `contestants`; throws if a server died. A round gives each
 * contestant `duration` seconds of load, cut into slices of about `slice` seconds that alternate
 * between them in mirrored order (A B C C B A A B C ...), so that a burst of other work on the
 * machine, or a drift in its speed, lands on every one alike instead of on whichever ran at the
 * time. `probe`, the logins' GET traffic, runs beside every slice.
 */
export async function measureRounds(
  scenario: string,
  contestants: readonly Contestant[],
  options: Pick<Options, "warmup" | "duration" | "slice" | "rounds">,
  probe?: Workload,
): Promise<Round[][]> {
  if (options.warmup > 0) {
    for (const c of contestants) await drive(c.server.url, c.workload, options.warmup);
  }
  const sliceCount = Math.max(1, Math.round(options.duration / options.slice));
  const sliceSeconds = options.duration / sliceCount;
  const rounds = new Map<Contestant, Round[]>(contestants.map((c) => [c, []]));
  for (let r = 1; r <= options.rounds; r++) {
    const slices = new Map<Contestant, SliceOfRound[]>(contestants.map((c) => [c, []]));
    for (let i = 0; i < sliceCount; i++) {
      // Mirrored across slices, and each round starts with the contestant the previous one ended with.
      const forward = ((r - 1) * sliceCount + i) % 2 === 0;
      for (const c of forward ? contestants : [...contestants].reverse()) {
        slices.get(c)?.push(await measureSlice(c.server, c.workload, probe, sliceSeconds, c.database));
      }
    }
    for (const c of contestants) {
      if (!c.server.alive()) {
        throw new Error(
          `${c.server.name} died during ${scenario}; its log (${c.server.logFile}) ends:\n${tail(c.server.logFile)}`,
        );
      }
      const round = toRound(slices.get(c) ?? []);
      rounds.get(c)?.push(round);
      log(
        `${scenario} round ${r}/${options.rounds} ${c.name}: ${round.requestsPerSecond.toFixed(0)} req/s, ` +
          `p99 ${round.p99Ms.toFixed(2)} ms, CPU ${round.cpuMsPerRequest.toFixed(3)} + ` +
          `PG ${round.databaseCpuMsPerRequest.toFixed(3)} ms/req, unexpected statuses ${round.non2xx + round.errors}, ` +
          `RSS ${(round.rssMaxBytes / 1048576).toFixed(0)} MB` +
          (round.eventLoopP99Ms === undefined
            ? ""
            : `, event-loop p99 ${round.eventLoopP99Ms.toFixed(1)} ms`),
      );
    }
  }
  return contestants.map((c) => rounds.get(c) ?? []);
}

interface SliceOfRound {
  readonly load: Slice;
  /** CPU seconds the server used during the slice. */
  readonly cpuSeconds: number;
  /** CPU seconds the PostgreSQL backends serving it used meanwhile; NaN when not measured. */
  readonly databaseCpuSeconds: number;
  readonly rssMaxBytes: number;
  readonly eventLoopP99Ms: number | undefined;
  readonly probe: Slice | undefined;
}

/** Longest the bench waits for a server's statements to end after its slice (then cancels them). */
const DRAIN_MS = 60_000;

/**
 * Waits until no statement of the server `applicationName` is running on the bench database.
 * When a slice ends, the load's connections close, but a statement a server had sent goes on in
 * PostgreSQL: a server whose statements take seconds (the baseline's search of a rare term on ten
 * million posts walks the primary key for seconds) would otherwise go on loading the database
 * during the next server's slice, and that server would be measured on a busy database. Past
 * `drainMs` the statements are cancelled; `say` is told of a wait longer than a second.
 */
export async function statementsEnded(
  database: pg.Client,
  applicationName: string,
  say: (message: string) => void,
  drainMs: number = DRAIN_MS,
): Promise<void> {
  const theirs =
    "from pg_stat_activity where application_name = $1 and datname = current_database() and state = 'active'";
  const running = async () =>
    Number(
      (await database.query<{ running: string }>(`select count(*) as running ${theirs}`, [applicationName]))
        .rows[0]?.running ?? 0,
    );
  const started = performance.now();
  const deadline = started + drainMs;
  while ((await running()) > 0) {
    if (performance.now() > deadline) {
      await database.query(`select pg_cancel_backend(pid) ${theirs}`, [applicationName]);
      say(`${applicationName}: statements still running ${drainMs / 1000} s after its slice were cancelled`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const waitedMs = performance.now() - started;
  // A few milliseconds are the answers in flight when the load stopped: not worth a line.
  if (waitedMs > 1000)
    say(`${applicationName}: its statements ran on for ${(waitedMs / 1000).toFixed(1)} s after its slice`);
}

/**
 * One slice: the load, the CPU of the server and of its PostgreSQL backends, the RSS sampled
 * meanwhile, and for logins the concurrent GETs and the event-loop delay.
 */
async function measureSlice(
  server: ServerProcess,
  workload: Workload,
  probe: Workload | undefined,
  seconds: number,
  database: pg.Client | undefined,
): Promise<SliceOfRound> {
  if (probe !== undefined) await eventLoopP99Ms(server.url); // resets the server's histogram
  const backends = (): Promise<BackendCpu> =>
    database === undefined
      ? Promise.resolve(new Map())
      : readBackendCpu(database, applicationName(server.name));
  const backendsBefore = await backends();
  const rss = sampleMaxRss(server.pid);
  const cpuBefore = cpuSeconds(server.pid);
  const [load, probeLoad] = await Promise.all([
    drive(server.url, workload, seconds),
    probe === undefined ? undefined : drive(server.url, probe, seconds),
  ]);
  const cpu = cpuSeconds(server.pid) - cpuBefore;
  const rssMaxBytes = rss();
  const databaseCpuSeconds = backendCpuBetween(backendsBefore, await backends());
  const eventLoop = probe === undefined ? undefined : await eventLoopP99Ms(server.url);
  if (database !== undefined) await statementsEnded(database, applicationName(server.name), log);
  return {
    load,
    cpuSeconds: cpu,
    databaseCpuSeconds,
    rssMaxBytes,
    eventLoopP99Ms: eventLoop,
    probe: probeLoad,
  };
}

/**
 * A round from its slices. The event-loop delay p99 of a round is the largest of its slices'
 * (each slice's histogram is separate, and the worst slice is the honest bound).
 */
function toRound(slices: readonly SliceOfRound[]): Round {
  const eventLoop = slices.flatMap((s) => (s.eventLoopP99Ms === undefined ? [] : [s.eventLoopP99Ms]));
  const probes = slices.flatMap((s) => (s.probe === undefined ? [] : [s.probe]));
  const load = combine(slices.map((s) => s.load));
  const responses = load.responses + probes.reduce((sum, p) => sum + p.latencies.length, 0);
  return {
    ...load,
    cpuMsPerRequest: (1000 * slices.reduce((sum, s) => sum + s.cpuSeconds, 0)) / responses,
    databaseCpuMsPerRequest: (1000 * slices.reduce((sum, s) => sum + s.databaseCpuSeconds, 0)) / responses,
    rssMaxBytes: Math.max(...slices.map((s) => s.rssMaxBytes)),
    eventLoopP99Ms: eventLoop.length > 0 ? Math.max(...eventLoop) : undefined,
    probe: probes.length > 0 ? combine(probes) : undefined,
  };
}

/**
 * The server's event-loop delay p99 since the previous call, from prom-client's
 * `nodejs_eventloop_lag_p99_seconds` on GET /metrics (reading it resets the histogram);
 * `undefined` when the server publishes no such figure.
 */
async function eventLoopP99Ms(baseUrl: string): Promise<number | undefined> {
  try {
    const response = await fetch(`${baseUrl}/metrics`);
    const text = await response.text();
    if (!response.ok) return undefined;
    const match = /^nodejs_eventloop_lag_p99_seconds(?:\{[^}]*\})? (\S+)$/m.exec(text);
    return match?.[1] === undefined ? undefined : Number(match[1]) * 1000;
  } catch {
    return undefined;
  }
}

/**
 * The line under a run's heading: when, on which node and CPUs, `what` was measured (its size and
 * connections), the rounds and slices, `context`, and the service's extra node arguments if any.
 */
export function runLine(options: Options, what: string, context: string): string {
  const cpus = os.cpus();
  return (
    `${new Date().toISOString()} · node ${process.version} · ${cpus.length} × ${cpus[0]?.model ?? "?"} · ` +
    `${what} · ${options.rounds} round(s) × ${options.duration} s in ${options.slice} s slices ` +
    `(warm-up ${options.warmup} s) · ${context}` +
    (options.serviceNodeArgs.length > 0
      ? ` · service run with \`node ${options.serviceNodeArgs.join(" ")}\``
      : "")
  );
}

/** Prints the tables and the targets, and keeps the raw rounds in bench/results/. */
export async function publish(
  runs: readonly ScenarioRuns[],
  options: Options,
  heading: string,
  serviceName: string,
  context: string,
  timeTo20?: readonly TimeTo20[],
): Promise<void> {
  const connections = options.closedLoop
    ? `closed loop at ${CLOSED_LOOP_CONNECTIONS.join(", ")} connections`
    : `${options.connections} connections (login ${options.loginConnections} + ${options.probeRate} GET/s)`;
  console.log(
    `\n## ${heading}\n\n${runLine(options, `${options.posts} posts / ${options.users} users · ${connections}`, context)}\n`,
  );
  console.log(render(runs, serviceName));
  const references = (["baseline", "express"] as const).filter((r) => runs.some((run) => run[r].length > 0));
  if (references.length > 0)
    console.log(
      `\nMedians over rounds. Ratios are ${references.map((r) => `${serviceName} / ${r}`).join(" and ")} ` +
        "per round (the servers ran in alternating slices of the same round), then the median of those; " +
        "a scenario measured against itself compares two workloads of the service the same way. " +
        "PG CPU is the CPU of the PostgreSQL backends serving a server's connections, per request.",
    );
  // Without a baseline (the embedded run, where the database also lives in the service's
  // process) the targets do not apply; the figures are for information.
  if (runs.some((r) => r.baseline.length > 0)) console.log(`\n${renderVerdicts(judge(runs))}`);
  if (timeTo20 !== undefined) {
    printTimeTo20(timeTo20, `the service on ${options.posts} posts before the scenarios, one term at a time`);
  }

  await keep({
    heading,
    serviceName,
    date: new Date().toISOString(),
    options,
    node: process.version,
    runs,
    ...(timeTo20 === undefined ? {} : { timeTo20 }),
  });
}

/**
 * Prints the terms followed to their first twenty matches (`measureTimeTo20`) under its heading,
 * `context` the line that says on what and how they were measured, and the target's verdict.
 */
export function printTimeTo20(results: readonly TimeTo20[], context: string): void {
  console.log(`\n## Time to the first 20 matches, following nextCursor\n\n${context}\n`);
  console.log(renderTimeTo20(results));
}

/**
 * Keeps a run's raw results in bench/results/<run>.json and draws their chart beside them as
 * <run>.svg (measure/charts.ts; `node bench/dist/bench-chart.js` draws it again from the JSON).
 */
export async function keep(results: BenchResults): Promise<void> {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = `${RESULTS_DIR}/${RUN_ID}.json`;
  await writeFile(file, JSON.stringify(results, null, 2));
  log(`raw results: ${file}`);
  const chart = `${RESULTS_DIR}/${RUN_ID}.svg`;
  await writeFile(chart, await resultsChartSvg(results, runDate(results, RUN_ID)));
  log(`chart: ${chart}`);
}
