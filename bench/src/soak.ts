/**
 * `pnpm soak`: mixed load on the built service (100 s unless told otherwise) while the PostgreSQL
 * server it uses is restarted, then checks that nothing acknowledged was lost, that the service
 * recovered by itself, that idempotent retries named the first post and that the heap, net of the
 * post cache, did not grow. Writes bench/SOAK.md and its memory chart bench/soak-memory.svg, and
 * exits 1 when a check fails.
 *
 * It restarts the PostgreSQL cluster (`pg_ctlcluster`), so it needs to run as root or as the
 * cluster's owner, and it disturbs everything else using that server: never run it in CI or
 * next to a test run. Settings (environment): SOAK_ADMIN_URL (default DATABASE_URL, else
 * postgres://postgres@127.0.0.1:5432/postgres), SOAK_CLUSTER (default "15 main"),
 * SOAK_DURATION_MS (100000), SOAK_RESTARTS (1), SOAK_RESTART_AT_MS (40000; with several restarts
 * they are spread evenly instead), SOAK_DOWN_MS (5000), SOAK_CLIENTS (8), SOAK_THINK_MS (0: each client's
 * pause after each answer, to keep a long run's load moderate), SOAK_HEAP_SNAPSHOTS
 * ("1": heap snapshots after the warm-up and at the end of the load), SOAK_STANDBY_URL (a hot
 * standby of the cluster the service then reads through; unset: none), SOAK_NATS ("off" leaves
 * out the relay of the change events to a NATS server of the soak's own, on port 21331, which
 * runs whenever the machine has `nats-server`).
 *
 * The service runs with its inspector on a loopback port the kernel picks: the soak forces full
 * collections through it to read the heap a leak would raise (see soak/heap-probe.ts).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect as connectNats } from "@nats-io/transport-node";
import { natsServerAvailable, startNatsServer, type TestNatsServer } from "@posts/adapters-nats/testing";
import pg from "pg";
import { recreateDatabase, withDatabase } from "./load/database.js";
import { freePorts, residentBytes } from "./servers/server-process.js";
import { HeapProbe, inspectorUrl } from "./soak/heap-probe.js";
import { metricSum, metricValue } from "./soak/service-metrics.js";
import {
  analyzeLoad,
  CATCH_UP_MS,
  type CollectedHeapReading,
  judgedFrom,
  LEAK_BOUNDS,
  leakVerdict,
  type MemorySample,
  memoryTrend,
  type Pause,
} from "./soak/soak-analysis.js";
import { memoryChartSvg } from "./soak/soak-chart.js";
import type { FeedObservation, LoadSettings, LoadWorker, RequestRecord } from "./soak/soak-load.js";
import { type CheckVerdict, keptNotes, type SoakResult, soakReport } from "./soak/soak-report.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const RESULTS = `${ROOT}bench/results`;
const DATABASE = "posts_soak";

const env = (name: string, fallback: string) => process.env[name] || fallback;
const settings = {
  adminUrl: env("SOAK_ADMIN_URL", env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")),
  cluster: env("SOAK_CLUSTER", "15 main").split(" "),
  durationMs: Number(env("SOAK_DURATION_MS", "100000")),
  restarts: Number(env("SOAK_RESTARTS", "1")),
  restartAtMs: Number(env("SOAK_RESTART_AT_MS", "40000")),
  downMs: Number(env("SOAK_DOWN_MS", "5000")),
  clients: Number(env("SOAK_CLIENTS", "8")),
  thinkMs: Number(env("SOAK_THINK_MS", "0")),
  postsPerClient: 5,
  /**
   * A hot standby of the cluster (its server, any database): the service reads through it
   * (DATABASE_READ_URLS, on the soak's database). Unset: every statement on the primary.
   */
  standbyUrl: env("SOAK_STANDBY_URL", ""),
  /** Heap snapshots (after the warm-up and at the end) into bench/results/, for a comparison by constructor. */
  snapshots: env("SOAK_HEAP_SNAPSHOTS", "0") === "1",
  /** The change events relayed to a NATS server of the soak's own (NATS_URL), unless "off". */
  nats: env("SOAK_NATS", "on") !== "off" && natsServerAvailable(),
};
// The soak's own NATS server: a port no test or bench uses (theirs are 21301–21321).
const NATS_PORT = 21331;
/** Forced full collections: about forty a run, at least 2.5 s and at most 30 s apart. */
const COLLECT_EVERY_MS = Math.min(30_000, Math.max(2_500, Math.round(settings.durationMs / 40)));
// The service's own defaults, stated so that the report says what was measured.
const SERVICE_ENV = {
  DB_POOL_SIZE: "10",
  DB_CONNECT_TIMEOUT_MS: "3000",
  DB_STATEMENT_TIMEOUT_MS: "5000",
  DB_STARTUP_TIMEOUT_MS: "30000",
  GRACE_PERIOD_MS: "10000",
  LOG_LEVEL: "warn",
  // The memory check needs the bound to tell when the cache is full (soak-analysis judgedFrom).
  POST_CACHE_MAX_BYTES: String(28 * 2 ** 20),
};
const CACHE_BOUND_BYTES = Number(SERVICE_ENV.POST_CACHE_MAX_BYTES);
const REPORT = `${ROOT}bench/SOAK.md`;
/** The memory chart the report shows, beside it. */
const CHART = `${ROOT}bench/soak-memory.svg`;
const REQUEST_TIMEOUT_MS = 15_000;
const BURST = 60;
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
/** Where the memory check's judged readings started, and why, in minutes into the run. */
const warmUpText = (leak: ReturnType<typeof leakVerdict>, start: number) => {
  const minutes = (at: number) => `${((at - start) / 60_000).toFixed(1)} min`;
  const full =
    leak.window.cacheFullAt === undefined
      ? "the post cache never reached its bound"
      : `the post cache reached its bound at ${minutes(leak.window.cacheFullAt)}`;
  return `from ${minutes(leak.window.from)}, by ${leak.window.rule}; ${full}`;
};
/** A check's verdict from a condition that must hold. */
const holds = (condition: boolean): CheckVerdict => (condition ? "pass" : "fail");

/** When each restart begins, in milliseconds into the load: one in the middle, or several spread evenly. */
const RESTART_SCHEDULE =
  settings.restarts === 1
    ? [settings.restartAtMs]
    : Array.from({ length: settings.restarts }, (_, index) =>
        Math.round((settings.durationMs * (index + 1)) / (settings.restarts + 1)),
      );

const run = promisify(execFile);
const log = (message: string) => process.stderr.write(`[soak ${new Date().toISOString()}] ${message}\n`);

/**
 * The built service on `port`, logging to `logFile`, with its inspector on a loopback port of the
 * kernel's choosing (the soak's only way to force full collections and take heap snapshots);
 * resolves once /ready answers 200.
 */
async function startService(port: number, databaseUrl: string, logFile: string, natsUrl?: string) {
  const log = createWriteStream(logFile, { flags: "a" });
  const child: ChildProcess = spawn(
    process.execPath,
    ["--inspect=127.0.0.1:0", `${ROOT}packages/app/dist/main.js`],
    {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        NODE_ENV: "production",
        HOST: "127.0.0.1",
        PORT: String(port),
        DATABASE_URL: databaseUrl,
        JWT_SECRET: randomBytes(48).toString("base64"),
        ...SERVICE_ENV,
        ...(settings.standbyUrl === ""
          ? {}
          : { DATABASE_READ_URLS: withDatabase(settings.standbyUrl, DATABASE) }),
        ...(natsUrl === undefined ? {} : { NATS_URL: natsUrl }),
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  child.stdout?.pipe(log, { end: false });
  const inspector = inspectorUrl(child.stderr as Readable, (chunk) => log.write(chunk));
  const exited = new Promise<{ code: number | null; signal: string | null; at: number }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited during start-up; see ${logFile}`);
    const ready = await fetch(`${url}/ready`).then(
      (response) => response.status,
      () => 0,
    );
    if (ready === 200) break;
    if (Date.now() > deadline) throw new Error(`the service was not ready within 60 s; see ${logFile}`);
    await sleep(200);
  }
  if (child.pid === undefined) throw new Error("the service has no pid");
  const probe = await HeapProbe.connect(await inspector);
  return { url, pid: child.pid, child, exited, probe };
}

/** One user per client, registered and logged in through the API, each with a few posts. */
async function prepareClients(url: string): Promise<LoadWorker[]> {
  // A POST of JSON as the app's walk-through test builds one: the bench imports no test code.
  const json = (body: unknown, token?: string): RequestInit => ({
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { "x-auth-token": token }),
    },
    body: JSON.stringify(body),
  });
  const workers: LoadWorker[] = [];
  for (let client = 0; client < settings.clients; client++) {
    const credentials = {
      email: `soak-${client}-${randomBytes(4).toString("hex")}@bench.test`,
      password: "soak password",
    };
    const registered = await fetch(`${url}/api/v1/user`, json(credentials));
    if (registered.status !== 201) throw new Error(`registration answered ${registered.status}`);
    const login = await fetch(`${url}/api/v1/user/login`, json(credentials));
    const { token } = (await login.json()) as { token: string };
    const postIds: number[] = [];
    for (let post = 0; post < settings.postsPerClient; post++) {
      const created = await fetch(
        `${url}/api/v1/posts`,
        json({ title: `seed ${client}-${post}`, content: "seed" }, token),
      );
      postIds.push(Number(/\/(\d+)$/.exec(created.headers.get("location") ?? "")?.[1]));
    }
    workers.push({ token, postIds });
  }
  return workers;
}

/** Runs soak-load.js in its own process; resolves when its time is up. */
async function runLoad(load: LoadSettings): Promise<void> {
  const child = spawn(process.execPath, [`${ROOT}bench/dist/soak/soak-load.js`], {
    env: { ...process.env, SOAK_LOAD: JSON.stringify(load) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  child.stdout?.on("data", (chunk) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`the load process exited with ${code}`);
  log(`load process: ${output.trim()}`);
}

/** Runs `pg_ctlcluster <cluster> <action>`, which waits until the server has stopped or started. */
function pgCtlCluster(action: "stop" | "start") {
  return run("pg_ctlcluster", ["--skip-systemctl-redirect", ...settings.cluster, action]);
}

/** Stops the PostgreSQL cluster, waits, starts it; answers when each step happened. */
async function restartPostgres() {
  const stopAt = Date.now();
  log("stopping PostgreSQL");
  // Even when stopping fails half-way, the shared server is started again before this throws.
  const stopFailure = await pgCtlCluster("stop").then(
    () => undefined,
    (error: unknown) => error ?? new Error("pg_ctlcluster stop failed"),
  );
  const stoppedAt = Date.now();
  await sleep(settings.downMs);
  const startAt = Date.now();
  log("starting PostgreSQL");
  await pgCtlCluster("start");
  const startedAt = Date.now();
  if (stopFailure !== undefined) throw stopFailure;
  log("PostgreSQL is back");
  return { stopAt, stoppedAt, startAt, startedAt };
}

/** Looks every acknowledged write up in the database. */
async function checkWrites(
  databaseUrl: string,
  ids: readonly number[],
  updates: ReadonlyMap<number, string>,
) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // The service stores instants; its answers show them in APP_TIME_ZONE (UTC here) without a zone.
    const { rows } = await client.query<{ id: string; updated: string }>(
      `select id, to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS') as updated
       from posts where id = any($1::bigint[])`,
      [[...new Set([...ids, ...updates.keys()])]],
    );
    const stored = new Map(rows.map((row) => [Number(row.id), row.updated]));
    return {
      acknowledgedCreates: ids.length,
      missingCreates: ids.filter((id) => !stored.has(id)),
      patchedPosts: updates.size,
      lostUpdates: [...updates].flatMap(([id, updatedAt]) =>
        (stored.get(id) ?? "") < updatedAt ? [id] : [],
      ),
    };
  } finally {
    await client.end();
  }
}

async function postgresVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ version: string }>(
      "select current_setting('server_version') as version",
    );
    return rows[0]?.version ?? "?";
  } finally {
    await client.end();
  }
}

async function main(): Promise<number> {
  mkdirSync(RESULTS, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const logFile = `${RESULTS}/soak-${stamp}.service.log`;
  const recordsFile = `${RESULTS}/soak-${stamp}.requests.jsonl`;
  const databaseUrl = withDatabase(settings.adminUrl, DATABASE);

  log(`database ${DATABASE}, service log ${logFile}`);
  await recreateDatabase(settings.adminUrl, DATABASE);
  const [port] = await freePorts(1);
  const nats = settings.nats ? await startNatsServer(NATS_PORT) : undefined;
  try {
    const service = await startService(port ?? 0, databaseUrl, logFile, nats?.url);
    try {
      return await soakAgainst(service, nats, { databaseUrl, recordsFile, stamp });
    } finally {
      // A failed run must not leave the service behind.
      if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill("SIGKILL");
    }
  } finally {
    await nats?.close();
  }
}

/** What the relay left in the NATS stream, once it holds the feed's last event or a minute has passed. */
async function relayedStream(nats: TestNatsServer, lastEvent: number) {
  const connection = await connectNats({ servers: nats.url });
  try {
    const manager = await jetstreamManager(connection);
    const idAt = async (seq: number) =>
      (await manager.streams.getMessage("POSTS", { seq }))?.header?.get("Nats-Msg-Id") ?? "";
    const deadline = Date.now() + 60_000;
    let state = (await manager.streams.info("POSTS")).state;
    while (state.last_seq < lastEvent && Date.now() < deadline) {
      await sleep(500);
      state = (await manager.streams.info("POSTS")).state;
    }
    // The stream began with event 1, so sequence n must hold event n: the first, the last and a
    // thousand spread between are read back (every one of them would take minutes after an hour).
    const sampled = [
      1,
      state.last_seq,
      ...Array.from({ length: 1000 }, () => 1 + Math.floor(Math.random() * state.last_seq)),
    ];
    let misplaced = 0;
    for (const seq of sampled) if ((await idAt(seq)) !== String(seq)) misplaced++;
    return {
      messages: state.messages,
      firstSeq: state.first_seq,
      lastSeq: state.last_seq,
      sampled: sampled.length,
      misplaced,
    };
  } finally {
    await connection.close();
  }
}

/** The load, the restart, the checks and the report, against a service that is ready. */
async function soakAgainst(
  service: Awaited<ReturnType<typeof startService>>,
  nats: TestNatsServer | undefined,
  files: { readonly databaseUrl: string; readonly recordsFile: string; readonly stamp: string },
): Promise<number> {
  const { databaseUrl, recordsFile, stamp } = files;
  const feedFile = `${RESULTS}/soak-${stamp}.feed.json`;
  const workers = await prepareClients(service.url);

  const samples: MemorySample[] = [];
  const heapSamples: MemorySample[] = [];
  const sampler = setInterval(() => {
    const at = Date.now();
    samples.push({ at, bytes: residentBytes(service.pid) });
    // The heap as V8 reports it (prom-client's default metrics), garbage included: for the chart.
    void metricValue(service.url, "nodejs_heap_size_used_bytes").then((bytes) =>
      heapSamples.push({ at, bytes }),
    );
  }, 1000);
  // What a leak raises: the heap after forced full collections, beside what the caches hold then.
  const collected: CollectedHeapReading[] = [];
  const collecting = (async () => {
    const until = Date.now() + settings.durationMs;
    while (Date.now() < until) {
      await sleep(Math.min(COLLECT_EVERY_MS, Math.max(0, until - Date.now())));
      const at = Date.now();
      const heapBytes = await service.probe.collectedHeapBytes().catch(() => 0);
      const cacheBytes = await metricValue(service.url, "post_cache_bytes");
      collected.push({ at, heapBytes, cacheBytes });
    }
  })();
  const pauses: Pause[] = [];
  const snapshot = async (name: string) => {
    if (!settings.snapshots) return;
    const file = `${RESULTS}/soak-${stamp}.${name}.heapsnapshot`;
    const from = Date.now();
    await service.probe.writeSnapshot(file);
    pauses.push({ from, to: Date.now() });
    log(`heap snapshot ${name}: ${file} (${Date.now() - from} ms)`);
  };
  // The warm snapshot is taken where the judged readings start: after a fifth of the run, or twice
  // the time the post cache took to reach its bound (judgedFrom); when the cache is not full by
  // the middle of the run, at the middle.
  const warmSnapshot = (async () => {
    const started = Date.now();
    for (;;) {
      await sleep(2_000);
      const window = judgedFrom(collected, LEAK_BOUNDS, CACHE_BOUND_BYTES);
      const share = started + settings.durationMs * LEAK_BOUNDS.warmUpShare;
      const target =
        window.cacheFullAt === undefined
          ? Date.now() > started + settings.durationMs / 2
            ? Date.now()
            : Number.POSITIVE_INFINITY
          : Math.max(share, started + (window.cacheFullAt - started) * LEAK_BOUNDS.settleFactor);
      if (Date.now() >= target || Date.now() >= started + settings.durationMs) break;
    }
    if (Date.now() < started + settings.durationMs) await snapshot("warm");
  })();
  log(
    `load for ${settings.durationMs} ms from ${settings.clients} clients; restarts at ${RESTART_SCHEDULE.join(", ")} ms`,
  );
  const load = runLoad({
    baseUrl: service.url,
    durationMs: settings.durationMs,
    workers,
    outFile: recordsFile,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    thinkMs: settings.thinkMs,
    feedFile,
  });
  const loadStartedAt = Date.now();
  const restarts = (async () => {
    const times = [];
    for (const at of RESTART_SCHEDULE) {
      await sleep(Math.max(0, loadStartedAt + at - Date.now()));
      times.push(await restartPostgres());
    }
    return times;
  })();
  const [, restartTimes] = await Promise.all([load, restarts, collecting, warmSnapshot]);
  clearInterval(sampler);
  await snapshot("end");

  // Line by line: the records of an hour can exceed the longest string V8 makes.
  const records: RequestRecord[] = [];
  for await (const line of createInterface({ input: createReadStream(recordsFile) }))
    if (line !== "") records.push(JSON.parse(line) as RequestRecord);
  const analysis = analyzeLoad(records, restartTimes, pauses);
  const feed = JSON.parse(readFileSync(feedFile, "utf8")) as FeedObservation;
  const acknowledged = new Set(analysis.acknowledgedIds);
  const withoutEvent = (subjects: readonly number[]) => {
    const seen = new Set(subjects);
    return [...acknowledged].filter((id) => !seen.has(id)).length;
  };
  // An open stream gets each event within a second; only an outage or a snapshot's pause may
  // put it more than 5 s behind the pages reader, once each.
  const lagsAllowed = restartTimes.length + pauses.length;
  const feedCheck = {
    streamMissing: withoutEvent(feed.stream.createdSubjects),
    pagesMissing: withoutEvent(feed.pages.createdSubjects),
  };
  const relayed = nats === undefined ? undefined : await relayedStream(nats, feed.pages.last);

  // The pool must have recovered by itself: readiness, then a burst of reads and writes.
  // Status 0: no answer at all, the service is gone.
  const readyStatus = await fetch(`${service.url}/ready`).then(
    (response) => response.status,
    () => 0,
  );
  const worker = workers[0];
  const burst = await Promise.all(
    Array.from({ length: BURST }, (_, index) =>
      fetch(
        `${service.url}/api/v1/posts${index % 3 === 0 ? "" : "?size=5"}`,
        index % 3 === 0
          ? {
              method: "POST",
              headers: { "content-type": "application/json", "x-auth-token": worker?.token ?? "" },
              body: JSON.stringify({ title: `burst ${index}`, content: "burst" }),
            }
          : {},
      ).then(
        (response) => response.status,
        () => 0,
      ),
    ),
  );
  const writes = await checkWrites(databaseUrl, analysis.acknowledgedIds, analysis.acknowledgedUpdates);
  const standby = {
    reads: await metricSum(service.url, "db_standby_reads_total"),
    fallbacks: await metricSum(service.url, "db_standby_fallback_reads_total"),
    withoutPrimary: await metricSum(service.url, "db_standby_reads_without_primary_total"),
  };

  const crashed = service.child.exitCode !== null || service.child.signalCode !== null;
  await service.probe.close().catch(() => undefined);
  const stoppingAt = Date.now();
  if (!crashed) service.child.kill("SIGTERM");
  const exit = await service.exited;
  const leak = leakVerdict(collected, LEAK_BOUNDS, CACHE_BOUND_BYTES);
  // RSS is judged from the same reading on, and not before the warm snapshot has ended: building
  // the snapshot raises RSS for good (the allocator keeps the native memory it freed).
  const rssFrom = Math.max(leak.window.from, pauses[0]?.to ?? 0);
  const rss = memoryTrend(samples.filter((sample) => sample.at >= rssFrom));
  const heap = memoryTrend(heapSamples);
  const burstSucceeded = burst.filter((status) => status >= 200 && status < 300).length;
  const firstStop = restartTimes[0]?.stopAt ?? 0;

  const checks: SoakResult["checks"] = [
    {
      name: "no lost writes",
      verdict: holds(writes.missingCreates.length === 0 && writes.lostUpdates.length === 0),
      detail: `${writes.missingCreates.length} of ${writes.acknowledgedCreates} acknowledged creates missing, ${writes.lostUpdates.length} of ${writes.patchedPosts} patched posts older than acknowledged`,
    },
    {
      name: "only 503, only while the database was away",
      verdict: holds(analysis.unexpected === 0 && analysis.failuresBeforeRestarts === 0),
      detail: `${analysis.failures} non-2xx answers, ${analysis.unexpected} of them not 503, ${analysis.failuresBeforeRestarts} before the first restart, ${analysis.failuresDuringPauses} to requests in flight while a heap snapshot stopped the service (503 or a client timeout allowed there)`,
    },
    {
      name: "recovers by itself within 10 s",
      verdict: holds(
        analysis.outages.every(
          ({ window }) =>
            window === undefined || (window.lastAfterStartMs < 10_000 && window.successesAfter > 0),
        ),
      ),
      detail: analysis.outages
        .map(({ window }, index) =>
          window === undefined
            ? `restart ${index + 1}: no failures`
            : `restart ${index + 1}: last failure ${Math.round(window.lastAfterStartMs)} ms after the server was back, then ${window.successesAfter} × 2xx`,
        )
        .join("; "),
    },
    {
      name: "serves after the restarts",
      verdict: holds(readyStatus === 200 && burstSucceeded === BURST),
      detail: `/ready ${readyStatus}, burst ${burstSucceeded}/${BURST} 2xx`,
    },
    {
      name: "idempotent retries answer the first post",
      verdict: holds(analysis.retries.otherPost === 0),
      detail: `${analysis.retries.sent} keyed creates sent twice, ${analysis.retries.bothCreated} answered 201 both times, ${analysis.retries.otherPost} of them naming another post`,
    },
    ...(settings.standbyUrl === ""
      ? []
      : [
          {
            name: "reads through the standby",
            verdict: holds(standby.reads > 0),
            detail: `${standby.reads} reads answered by the standby (${standby.withoutPrimary} of them while the primary did not answer), ${standby.fallbacks} by the primary instead`,
          },
        ]),
    ...(relayed === undefined
      ? []
      : [
          {
            // The relay publishes each event once, in order, with Nats-Msg-Id its number, through
            // the restarts of the database it reads from.
            name: "NATS stream: every event once, in order",
            verdict: holds(
              relayed.firstSeq === 1 &&
                relayed.lastSeq >= feed.pages.last &&
                relayed.messages === relayed.lastSeq &&
                relayed.misplaced === 0,
            ),
            detail: `${relayed.messages} messages at sequences ${relayed.firstSeq}..${relayed.lastSeq} (the feed's followers read to ${feed.pages.last}); of ${relayed.sampled} sequences read back, ${relayed.misplaced} not holding the event of their number`,
          },
        ]),
    {
      // Both followers must have seen every number once, in order, to the same last one, across the
      // stream's resumes and the restarts; the open stream must follow live (each event reaches
      // open streams within a second, says the README) and reach the last event by itself once the
      // writes stop, since a resume every 5 to 30 s would otherwise hide a stream that sleeps;
      // and there must be a post.created for every post a 201 acknowledged.
      name: "change feed: no gap, an event for every create",
      verdict: holds(
        [feed.stream, feed.pages].every(
          (follower) => follower.gaps === 0 && follower.repeats === 0 && follower.resets === 0,
        ) &&
          feed.stream.last === feed.pages.last &&
          feed.stream.caughtUpMs !== undefined &&
          feed.stream.lagsOver5s <= lagsAllowed &&
          feed.stream.resumes > 0 &&
          feedCheck.streamMissing === 0 &&
          feedCheck.pagesMissing === 0,
      ),
      detail:
        `stream: ${feed.stream.events} events to number ${feed.stream.last} over ${feed.stream.resumes} resumes with Last-Event-ID ` +
        `(${feed.stream.refused} connections refused or broken), ${feed.stream.gaps} skipped, ${feed.stream.repeats} repeated, ${feed.stream.resets} resets; ` +
        `behind the pages at most ${(feed.stream.longestLagMs / 1000).toFixed(0)} s, ${feed.stream.lagsOver5s} times over 5 s (allowed ${lagsAllowed}: one per restart or snapshot); ` +
        (feed.stream.caughtUpMs === undefined
          ? `after the load the open stream had not reached the last event within ${CATCH_UP_MS / 1000} s (resumed, it read the rest); `
          : `after the load the open stream reached the last event in ${(feed.stream.caughtUpMs / 1000).toFixed(1)} s; `) +
        `JSON pages: ${feed.pages.events} events to number ${feed.pages.last} in ${feed.pages.requests} pages (${feed.pages.refused} refused), ` +
        `${feed.pages.gaps} skipped, ${feed.pages.repeats} repeated; of ${acknowledged.size} acknowledged creates, ` +
        `${feedCheck.streamMissing} without a post.created on the stream, ${feedCheck.pagesMissing} in the pages`,
    },
    {
      // The heap after forced full collections, net of what the bounded caches hold, judged after
      // the warm-up (leakVerdict); RSS is only bounded, against a native leak the heap would not show.
      name: "memory flat",
      verdict: crashed || rss.ratio >= 2 || leak.verdict === "fail" ? "fail" : leak.verdict,
      detail:
        `heap after full collections net of the post cache, median of the first and of the last quarter ` +
        `of ${leak.readings} readings after the warm-up (${warmUpText(leak, collected[0]?.at ?? 0)}): ${mib(leak.baselineBytes)}, ${mib(leak.finalBytes)}; ` +
        `growth ${mib(leak.growthBytes)} (allowed ${mib(leak.allowedBytes)}; slope ${mib(leak.slopeBytesPerHour)} per hour); ` +
        `post cache ${mib(leak.cacheFirstBytes)} → ${mib(leak.cacheLastBytes)}; ` +
        `RSS after the warm-up and the warm snapshot, last-quarter max / first-quarter max = ${rss.ratio.toFixed(2)} (bound 2)`,
    },
    {
      name: "service survived",
      verdict: holds(!crashed),
      detail: crashed
        ? `exited by itself with code ${exit.code} ${Math.round((exit.at - firstStop) / 1000)} s after the first stop command; see its log`
        : "running until SIGTERM",
    },
    {
      name: "clean shutdown",
      verdict: holds(!crashed && exit.code === 0),
      detail: crashed
        ? "not reached: the service had already exited"
        : `exit code ${exit.code} after ${exit.at - stoppingAt} ms`,
    },
  ];

  const cpu = cpus();
  const result: SoakResult = {
    command: [
      ...Object.entries(process.env)
        .filter(([name]) => name.startsWith("SOAK_"))
        .map(([name, value]) => `${name}=${JSON.stringify(value)}`),
      "pnpm soak",
    ].join(" "),
    date: new Date().toISOString(),
    machine: `${cpu.length} × ${cpu[0]?.model ?? "?"}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Linux ${release()}, Node ${process.version}, PostgreSQL ${await postgresVersion(settings.adminUrl)}`,
    settings: {
      "load duration": `${settings.durationMs} ms`,
      clients: settings.clients,
      "pause of a client after each answer": `${settings.thinkMs} ms`,
      "PostgreSQL restarts": `${RESTART_SCHEDULE.length}, at ${RESTART_SCHEDULE.join(", ")} ms into the load`,
      "PostgreSQL down for": `${settings.downMs} ms each (plus the stop and start commands)`,
      "client timeout per request": `${REQUEST_TIMEOUT_MS} ms`,
      "hot standby the service reads through": settings.standbyUrl === "" ? "none" : settings.standbyUrl,
      ...Object.fromEntries(Object.entries(SERVICE_ENV).map(([name, value]) => [`service ${name}`, value])),
    },
    load: analysis,
    rss,
    heap,
    leak,
    afterwards: { readyStatus, burstSucceeded, burstSize: BURST },
    writes,
    shutdown: { crashed, code: exit.code, signal: exit.signal, ms: exit.at - stoppingAt },
    checks,
  };
  writeFileSync(REPORT, soakReport(result, keptNotes(REPORT)));
  const series = { rssSamples: samples, heapSamples, collectedHeap: collected, restartTimes };
  writeFileSync(
    `${RESULTS}/soak-${stamp}.json`,
    `${JSON.stringify(
      {
        ...result,
        load: { ...analysis, acknowledgedIds: undefined, acknowledgedUpdates: undefined },
        feed: {
          stream: { ...feed.stream, createdSubjects: undefined },
          pages: { ...feed.pages, createdSubjects: undefined },
        },
        ...series,
        pauses,
      },
      null,
      2,
    )}\n`,
  );
  writeFileSync(CHART, await memoryChartSvg(series, `Soak memory, ${result.date}`));
  for (const check of checks) log(`${check.verdict.padEnd(12)}  ${check.name}: ${check.detail}`);
  log("report written to bench/SOAK.md, its chart to bench/soak-memory.svg");
  return checks.some((check) => check.verdict === "fail") ? 1 : 0;
}

process.exitCode = await main();
