import { execFile, execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { signUp } from "../sign-up.js";
import { attachTopology, PGBOUNCER_POOL_SIZE, PORTS, ROOT, sql, type Topology } from "../topology.js";

/**
 * The service on the topology, as clients and operators meet it: three instances behind
 * HAProxy, PgBouncer in transaction pooling in front of a primary and two streaming standbys.
 */
const topology: Topology = attachTopology(inject("topologyDir"));
const INSTANCES = PORTS.instances.map((_, index) => topology.instanceUrl(index));

interface User {
  readonly token: string;
}

async function registerAndLogIn(baseUrl: string): Promise<User> {
  // Registration on one instance, login at once on another: the login's lookup may be a standby's.
  return { token: await signUp(baseUrl, { logInAt: INSTANCES[1] }) };
}

function send(baseUrl: string, method: string, path: string, user?: User, body?: unknown): Promise<Response> {
  return fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      ...(user === undefined ? {} : { "x-auth-token": user.token }),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(20_000),
  });
}

/** The id at the end of a 201's Location. */
function idOf(response: Response): string {
  const location = response.headers.get("location") ?? "";
  const id = /\/api\/v1\/posts\/(\d+)$/.exec(location)?.[1];
  if (id === undefined) throw new Error(`no post id in Location "${location}"`);
  return id;
}

/** The sum over every instance's /metrics of the samples of `metric` (any labels). */
async function metricSum(metric: string, labels = ""): Promise<number> {
  let sum = 0;
  for (const url of INSTANCES) {
    const response = await fetch(`${url}/metrics`);
    const text = await response.text();
    if (response.status !== 200) throw new Error(`GET ${url}/metrics answered ${response.status}: ${text}`);
    for (const line of text.split("\n")) {
      if (line.startsWith(`${metric}{${labels}`) || line.startsWith(`${metric} `)) {
        sum += Number(line.slice(line.lastIndexOf(" ") + 1));
      }
    }
  }
  return sum;
}

async function onStandby(standby: "standby1" | "standby2", text: string): Promise<void> {
  await sql(topology.directUrl(standby), text);
}

/** Runs `work` on `concurrency` workers until `count` items are done; answers what they threw. */
async function pool(
  count: number,
  concurrency: number,
  work: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const index = next;
        next += 1;
        await work(index);
      }
    }),
  );
}

beforeAll(() => {
  execFileSync(
    process.execPath,
    [join(ROOT, "node_modules/typescript/bin/tsc"), "-b", "packages/conformance"],
    {
      cwd: ROOT,
      stdio: "inherit",
    },
  );
});

afterAll(async () => {
  // Whatever a test stopped is running again for the next file.
  for (const server of ["primary", "standby1", "standby2"] as const) {
    if (topology.processes.pidOf(server) === undefined) await topology.startServer(server);
  }
  for (const index of PORTS.instances.keys()) {
    if (topology.processes.pidOf(`instance${index + 1}`) === undefined) await topology.startInstance(index);
  }
});

/** The log of instance `index` (0, 1, 2), where the topology's processes write theirs. */
const instanceLog = (index: number) => join(topology.dir, `instance${index + 1}.log`);

/** Where each instance's log ends now: what {@link loggedSince} reads from. */
function logEnds(): number[] {
  return PORTS.instances.map((_, index) => statSync(instanceLog(index)).size);
}

/**
 * The warnings and errors the instances logged after `ends` (from {@link logEnds}): level, time,
 * request id, message and the error's, one line each, for a failure's message. A 503's envelope
 * names no cause; the instance's log does ("dependency unavailable" with the error).
 */
function loggedSince(ends: readonly number[]): string {
  const lines: string[] = [];
  PORTS.instances.forEach((_, index) => {
    const log = readFileSync(instanceLog(index)).subarray(ends[index] ?? 0);
    for (const line of log.toString("utf8").split("\n")) {
      // A line still being written when the log was read does not end with "}".
      if (!line.startsWith("{") || !line.endsWith("}")) continue;
      const entry = JSON.parse(line) as {
        level: number;
        time: number;
        reqId?: string;
        msg?: string;
        err?: { message?: string };
      };
      if (entry.level < 40) continue;
      const at = new Date(entry.time).toISOString().slice(11, 23);
      lines.push(
        `instance${index + 1} ${at} ${entry.level} ${entry.reqId ?? "-"} ${entry.msg ?? ""}: ${entry.err?.message ?? ""}`,
      );
    }
  });
  return lines.length === 0 ? "(the instances logged no warning)" : lines.join("\n");
}

describe("the service on the topology", () => {
  it("passes the conformance suite through HAProxy", async () => {
    const ends = logEnds();
    const { code, output } = await new Promise<{ code: number; output: string }>((resolve) => {
      execFile(
        process.execPath,
        [
          "packages/conformance/dist/cli.js",
          "--base-url",
          topology.url,
          // One argument: a base64url key may begin with "-", which would read as an option.
          `--jwt-secret=${topology.jwtSecret}`,
          "--time-zone",
          "UTC",
        ],
        { cwd: ROOT, maxBuffer: 64 * 1024 * 1024, timeout: 180_000 },
        (error, stdout, stderr) => {
          const exit = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
          resolve({ code: exit, output: `${stdout}\n${stderr}` });
        },
      );
    });
    const summary = output.trim().split("\n").at(-1) ?? "";
    // Every case, those that wait at most 1 s for a change event included: the instances LISTEN
    // through PgBouncer's session pool (DATABASE_LISTEN_URL), not its transaction pool.
    const failed = [...output.matchAll(/^ {2}FAIL {2}(.+)$/gm)].map((match) => match[1]);
    const why = `${output.slice(-4000)}\n\nThe instances' warnings meanwhile:\n${loggedSince(ends).slice(-8000)}`;
    expect(failed, why).toEqual([]);
    expect(summary, why).toMatch(/^\d+ passed, 0 failed$/);
    expect(code, why).toBe(0);
  });

  it("never shows older data: 2,000 POST→GET, PATCH→GET and DELETE→GET pairs, each GET on another instance, one standby 200 ms behind", async () => {
    await onStandby("standby2", "ALTER SYSTEM SET recovery_min_apply_delay = '200ms'");
    await onStandby("standby2", "SELECT pg_reload_conf()");
    const readsBefore = await metricSum("db_standby_reads_total");
    const older: string[] = [];
    try {
      const user = await registerAndLogIn(INSTANCES[0] as string);
      const instance = (n: number) => INSTANCES[n % INSTANCES.length] as string;
      await pool(2000, 12, async (n) => {
        const created = await send(instance(n), "POST", "/api/v1/posts", user, {
          title: `t${n}`,
          content: "first",
        });
        expect(created.status).toBe(201);
        const id = idOf(created);
        const afterPost = await send(instance(n + 1), "GET", `/api/v1/posts/${id}`);
        if (afterPost.status !== 200) older.push(`POST ${id} then GET: ${afterPost.status}`);

        const patched = await send(instance(n + 1), "PATCH", `/api/v1/posts/${id}`, user, {
          content: "second",
        });
        expect(patched.status).toBe(200);
        const afterPatch = await send(instance(n + 2), "GET", `/api/v1/posts/${id}`);
        const seen =
          afterPatch.status === 200 ? ((await afterPatch.json()) as { content?: string }).content : undefined;
        if (seen !== "second") older.push(`PATCH ${id} then GET: ${afterPatch.status} ${seen}`);

        const deleted = await send(instance(n + 2), "DELETE", `/api/v1/posts/${id}`, user);
        expect(deleted.status).toBe(204);
        const afterDelete = await send(instance(n), "GET", `/api/v1/posts/${id}`);
        if (afterDelete.status !== 404) older.push(`DELETE ${id} then GET: ${afterDelete.status}`);
      });
    } finally {
      await onStandby("standby2", "ALTER SYSTEM RESET recovery_min_apply_delay");
      await onStandby("standby2", "SELECT pg_reload_conf()");
    }
    expect(older).toEqual([]);
    // The standbys did answer (usually most of the 6,000 GETs; the rest the primary after the wait).
    expect((await metricSum("db_standby_reads_total")) - readsBefore).toBeGreaterThan(1500);
  });

  it("keeps the PostgreSQL servers' connections at PgBouncer's pool size, however many instances and pool slots, plus one LISTEN session per instance", async () => {
    const slots = await metricSum("db_pool_max_connections");
    expect(slots).toBeGreaterThan(PGBOUNCER_POOL_SIZE);
    const user = await registerAndLogIn(topology.url);
    const created = await send(topology.url, "POST", "/api/v1/posts", user, { title: "t", content: "c" });
    const id = idOf(created);
    let running = true;
    const most = { primary: 0, standby1: 0, standby2: 0 };
    let mostListening = 0;
    const sampler = (async () => {
      while (running) {
        for (const server of ["primary", "standby1", "standby2"] as const) {
          // The LISTEN sessions come from PgBouncer's session pool (DATABASE_LISTEN_URL), one per
          // instance for as long as it runs, and are counted apart from the transaction pool's.
          const [row] = await sql<{ pooled: string; listening: string }>(
            topology.directUrl(server, "postgres"),
            `SELECT count(*) FILTER (WHERE application_name NOT LIKE '%(listen)') AS pooled,
                    count(*) FILTER (WHERE application_name LIKE '%(listen)') AS listening
             FROM pg_stat_activity WHERE datname = 'posts' AND backend_type = 'client backend'`,
          );
          most[server] = Math.max(most[server], Number(row?.pooled));
          if (server === "primary") mostListening = Math.max(mostListening, Number(row?.listening));
        }
      }
    })();
    // 96 clients at once, writes and reads, on every instance. The sampler stops however the
    // load ends, lest its queries outlive the test (the next one stops the primary under them).
    await pool(1500, 96, async (n) => {
      const response =
        n % 3 === 0
          ? await send(INSTANCES[n % 3] as string, "POST", "/api/v1/posts", user, {
              title: `c${n}`,
              content: "c",
            })
          : await send(
              INSTANCES[n % 3] as string,
              "GET",
              n % 3 === 1 ? `/api/v1/posts/${id}` : "/api/v1/posts",
            );
      expect(response.status).toBeLessThan(300);
      await response.arrayBuffer();
    }).finally(() => {
      running = false;
    });
    await sampler;
    expect(most.primary).toBeGreaterThan(0);
    expect(most.primary).toBeLessThanOrEqual(PGBOUNCER_POOL_SIZE);
    expect(mostListening).toBe(INSTANCES.length);
    expect(most.standby1).toBeLessThanOrEqual(PGBOUNCER_POOL_SIZE);
    expect(most.standby2).toBeLessThanOrEqual(PGBOUNCER_POOL_SIZE);
  });

  it("restarts the three instances one by one under steady load without an error or a lost write", async () => {
    const user = await registerAndLogIn(topology.url);
    const acknowledged: string[] = [];
    const errors: string[] = [];
    let running = true;
    let requests = 0;
    const load = Array.from({ length: 8 }, async (_, worker) => {
      for (let n = 0; running; n += 1) {
        try {
          const created = await send(topology.url, "POST", "/api/v1/posts", user, {
            title: `r${worker}-${n}`,
            content: "c",
          });
          requests += 1;
          if (created.status !== 201) {
            errors.push(`POST: ${created.status} ${await created.text()}`);
            continue;
          }
          const id = idOf(created);
          acknowledged.push(id);
          const read = await send(topology.url, "GET", `/api/v1/posts/${id}`);
          requests += 1;
          if (read.status !== 200) errors.push(`GET ${id}: ${read.status}`);
          await read.arrayBuffer();
        } catch (error) {
          errors.push(`request failed: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      for (const index of PORTS.instances.keys()) await topology.restartInstance(index);
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      running = false;
      await Promise.all(load);
    }
    expect(errors).toEqual([]);
    expect(requests).toBeGreaterThan(200);
    const lost: string[] = [];
    await pool(acknowledged.length, 16, async (n) => {
      const id = acknowledged[n] as string;
      const response = await send(topology.url, "GET", `/api/v1/posts/${id}`);
      if (response.status !== 200) lost.push(id);
      await response.arrayBuffer();
    });
    expect(lost).toEqual([]);
  });

  it("with the primary stopped, answers writes 503 and reads from a standby, and recovers by itself", async () => {
    const user = await registerAndLogIn(topology.url);
    const created = await send(topology.url, "POST", "/api/v1/posts", user, { title: "kept", content: "c" });
    expect(created.status).toBe(201);
    const id = idOf(created);
    await topology.waitForReplay();
    await topology.stopServer("primary");
    try {
      // While HAProxy notices that no instance is ready, and after: every read answered, every write refused.
      for (let attempt = 0; attempt < 12; attempt += 1) {
        const read = await send(topology.url, "GET", `/api/v1/posts/${id}`);
        expect(read.status).toBe(200);
        expect(((await read.json()) as { title: string }).title).toBe("kept");
        const write = await send(topology.url, "POST", "/api/v1/posts", user, {
          title: "refused",
          content: "c",
        });
        expect(write.status).toBe(503);
        expect(write.headers.get("retry-after")).not.toBeNull();
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(await metricSum("db_standby_reads_without_primary_total")).toBeGreaterThan(0);
    } finally {
      await topology.startServer("primary");
    }
    const write = await vi.waitFor(
      async () => {
        const write = await send(topology.url, "POST", "/api/v1/posts", user, {
          title: "after",
          content: "c",
        });
        expect(write.status).toBe(201);
        return write;
      },
      { timeout: 30_000, interval: 250 },
    );
    const read = await send(topology.url, "GET", `/api/v1/posts/${idOf(write)}`);
    expect(read.status).toBe(200);
  });
});
