import { setTimeout as sleep } from "node:timers/promises";
import { postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  accepts,
  type Exit,
  isListeningLine,
  type LogLine,
  type ServiceProcess,
  spawnService,
} from "../support/service-process.js";
import { RELIABILITY_JWT_SECRET } from "./in-process-service.js";
import { serverOf, useSuiteDatabase } from "./postgres-suite.js";
import { TcpProxy } from "./tcp-proxy.js";

const STARTUP_TIMEOUT_MS = 2000;
// Process start-up (tsx compiling the sources) is not part of the bound; only the waiting is.
const SLACK_MS = 1500;

const isRetryLine = (line: LogLine) => line.msg?.startsWith("the database does not answer yet") === true;
const fatalLine = (service: ServiceProcess) => service.logs.find((line) => line.level === 60);

/** A port nobody listens on: a proxy that refuses, which keeps anyone else from taking the port. */
async function refusingPort(): Promise<TcpProxy> {
  const proxy = await TcpProxy.start({ host: "127.0.0.1", port: 1 });
  await proxy.refuse();
  return proxy;
}

/** What a service started against a refusing database did, watched from outside. */
interface UnreachableStart {
  readonly service: ServiceProcess;
  readonly exit: Exit;
  /** `Date.now()` at the exit, comparable with the log lines' `time`. */
  readonly endedAt: number;
  /** Whether its HTTP port accepted a connection, asked every 50 ms while it ran. */
  readonly probes: readonly boolean[];
}

/** Starts the service against a database port that refuses, probing its HTTP port until it exits. */
async function startAgainstRefusingDatabase(): Promise<UnreachableStart> {
  const database = await refusingPort();
  // A port the test owns but does not listen on, so that any listener there is the service's.
  const http = await refusingPort();
  const httpPort = http.port;
  await http.close();
  try {
    const service = spawnService([], {
      JWT_SECRET: RELIABILITY_JWT_SECRET,
      HOST: "127.0.0.1",
      PORT: String(httpPort),
      DATABASE_URL: `postgres://postgres@127.0.0.1:${database.port}/postgres`,
      DB_STARTUP_TIMEOUT_MS: String(STARTUP_TIMEOUT_MS),
    });
    const probes: boolean[] = [];
    let running = true;
    const exited = service.exited.then((exit) => {
      running = false;
      return { exit, endedAt: Date.now() };
    });
    while (running) {
      probes.push(await accepts(httpPort));
      await sleep(50);
    }
    return { service, probes, ...(await exited) };
  } finally {
    await database.close();
  }
}

// Loading the sources is most of each child's start-up, so every child of this file starts
// before the first test, together, and each test then checks what its child did.
let unreachable: Promise<UnreachableStart>;

beforeAll(() => {
  unreachable = startAgainstRefusingDatabase();
  unreachable.catch(() => {});
});

describe("start-up while the database is unreachable", () => {
  afterAll(async () => {
    await (await unreachable.catch(() => undefined))?.service.kill();
  });

  it("retries with backoff for DB_STARTUP_TIMEOUT_MS, never listens, then exits 1 with a clear reason", async () => {
    const { service, exit, endedAt, probes } = await unreachable;
    expect(exit.code, service.output()).toBe(1);
    expect(probes.length).toBeGreaterThan(0);
    expect(probes).not.toContain(true);
    expect(service.logs.some(isListeningLine)).toBe(false);

    const retries = service.logs.filter(isRetryLine);
    expect(retries.length, service.output()).toBeGreaterThanOrEqual(2);
    // Backoff: the pauses grow (each is jittered within [½, 1] of a doubling delay).
    const delays = retries.map((line) => Number(line.delayMs));
    expect(delays[1]).toBeGreaterThanOrEqual(delays[0] ?? 0);
    expect(delays.reduce((sum, delay) => sum + delay, 0)).toBeLessThanOrEqual(STARTUP_TIMEOUT_MS);

    const fatal = fatalLine(service);
    expect(fatal?.msg).toContain(`did not answer within ${STARTUP_TIMEOUT_MS} ms (DB_STARTUP_TIMEOUT_MS)`);
    expect(fatal?.msg).toContain("ECONNREFUSED");
    // Gave up when the window closed, not long after; the window opened with the first attempt.
    const firstAttemptAt = Number(retries[0]?.time);
    expect(endedAt - firstAttemptAt).toBeLessThan(STARTUP_TIMEOUT_MS + SLACK_MS);
    expect(endedAt - firstAttemptAt).toBeGreaterThanOrEqual(STARTUP_TIMEOUT_MS * 0.9);
  });
});

describeNeeding(await postgresForTests(), "start-up while the database is not there yet", () => {
  const suiteDatabase = useSuiteDatabase();
  let proxy: TcpProxy;
  let late: ServiceProcess;
  let missing: ServiceProcess;
  let missingStartedAt: number;
  // Taken when the process exits, not when the test reads it: the tests before it take their own time.
  let missingExitedAt: Promise<number>;

  beforeAll(async () => {
    proxy = await TcpProxy.start(serverOf(suiteDatabase().connectionString));
    await proxy.refuse();
    late = spawnService([], {
      JWT_SECRET: RELIABILITY_JWT_SECRET,
      HOST: "127.0.0.1",
      PORT: "0",
      DATABASE_URL: proxy.proxied(suiteDatabase().connectionString),
      DB_STARTUP_TIMEOUT_MS: "30000",
      GRACE_PERIOD_MS: "5000",
    });
    const noSuchDatabase = new URL(suiteDatabase().connectionString);
    noSuchDatabase.pathname = "/posts_reliability_no_such_database";
    missingStartedAt = Date.now();
    missing = spawnService([], {
      JWT_SECRET: RELIABILITY_JWT_SECRET,
      HOST: "127.0.0.1",
      PORT: "0",
      DATABASE_URL: noSuchDatabase.toString(),
      DB_STARTUP_TIMEOUT_MS: "30000",
    });
    missingExitedAt = missing.exited.then(() => Date.now());
  });

  afterAll(async () => {
    await Promise.all([late?.kill(), missing?.kill()]);
    await proxy?.close();
  });

  it("waits for a database that comes up within DB_STARTUP_TIMEOUT_MS, and only then listens", async () => {
    // 30 s, not the default 45: a miss then fails within the test's 60 s, with the output.
    await late.waitForLog(isRetryLine, { timeoutMs: 30_000 });
    expect(late.logs.some(isListeningLine)).toBe(false);

    await proxy.restore();
    const listening = await late.waitForLog(isListeningLine, { timeoutMs: 30_000 });
    const ready = await fetch(`http://127.0.0.1:${listening.port}/ready`);
    expect(ready.status).toBe(200);

    late.child.kill("SIGTERM");
    expect((await late.exited).code).toBe(0);
  });

  it("exits 1 at once, without waiting out the window, when the database refuses for good (no such database)", async () => {
    const exit = await missing.exited;
    expect(exit.code, missing.output()).toBe(1);
    expect(missing.logs.some(isRetryLine)).toBe(false);
    expect(missing.logs.some(isListeningLine)).toBe(false);
    expect(fatalLine(missing)?.msg).toContain("could not be prepared");
    // Far less than the 30 s window: a wrong database name is not waited for.
    expect((await missingExitedAt) - missingStartedAt).toBeLessThan(20_000);
  });
});
