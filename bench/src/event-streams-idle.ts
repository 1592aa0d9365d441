/**
 * `pnpm bench:streams`: what a thousand open change-event streams cost one instance while
 * nothing happens. Starts the built service (embedded database, or DATABASE_URL's server when set,
 * in a database of its own), measures its RSS and CPU idle with no stream, opens STREAMS streams
 * (default 1000) over raw sockets, measures again over IDLE_MS (default 60000, four keep-alive
 * comments), then makes one change and times its arrival on every stream. Prints the figures as
 * JSON; bench/RESULTS.md#events keeps them.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { recreateDatabase, withDatabase } from "./load/database.js";
import { residentBytes, startBuiltService } from "./servers/server-process.js";

const STREAMS = Number(process.env.STREAMS ?? "1000");
const IDLE_MS = Number(process.env.IDLE_MS ?? "60000");
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** User plus system CPU time of `pid` so far, in milliseconds. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

async function idleWindow(pid: number, ms: number) {
  const cpuBefore = cpuMs(pid);
  const started = Date.now();
  let rssMax = 0;
  while (Date.now() - started < ms) {
    rssMax = Math.max(rssMax, residentBytes(pid));
    await sleep(500);
  }
  const elapsed = Date.now() - started;
  return {
    rssMiB: +(residentBytes(pid) / 1048576).toFixed(1),
    rssMaxMiB: +(rssMax / 1048576).toFixed(1),
    cpuMsPerMinute: +(((cpuMs(pid) - cpuBefore) / elapsed) * 60_000).toFixed(1),
  };
}

/**
 * The lowest V8 heap in use over ten scrapes of /metrics a second apart: close to what stays
 * alive after collections, which RSS (the embedded database's WASM memory grows and shrinks by
 * hundreds of MiB) does not show. Taken after a CPU window, so its scrapes are not counted there.
 */
async function heapFloorMiB(port: number): Promise<number> {
  let floor = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 10; i++) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const used = Number(/^nodejs_heap_size_used_bytes (\d+(?:\.\d+)?)/m.exec(text)?.[1]);
    if (Number.isFinite(used)) floor = Math.min(floor, used);
    await sleep(1000);
  }
  return +(floor / 1048576).toFixed(1);
}

function openStream(port: number): Promise<{ socket: Socket; received: () => string }> {
  return new Promise((resolve, reject) => {
    let text = "";
    const socket = connect(port, "127.0.0.1", () => {
      socket.write("GET /api/v1/posts/events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n");
    });
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      const first = text === "";
      text += chunk;
      if (first) resolve({ socket, received: () => text });
    });
    socket.on("error", reject);
  });
}

async function json(port: number, method: string, path: string, body?: unknown, token?: string) {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { "x-auth-token": token }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.text() };
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), "posts-streams-"));
  const server = process.env.DATABASE_URL;
  if (server !== undefined) await recreateDatabase(server, "posts_bench_streams");
  const env: Record<string, string> =
    server === undefined
      ? { DATA_DIR: dataDir }
      : {
          DATABASE_URL: withDatabase(server, "posts_bench_streams"),
          JWT_SECRET: randomBytes(48).toString("base64url"),
        };
  const { child, port } = await startBuiltService(env);
  const pid = child.pid as number;
  const streams: { socket: Socket; received: () => string }[] = [];
  try {
    // Let start-up settle (JIT, first collections) before the baseline.
    await sleep(5000);
    const baseline = {
      ...(await idleWindow(pid, Math.min(IDLE_MS, 30_000))),
      heapFloorMiB: await heapFloorMiB(port),
    };
    for (let i = 0; i < STREAMS; i++) streams.push(await openStream(port));
    await sleep(2000);
    const open = { ...(await idleWindow(pid, IDLE_MS)), heapFloorMiB: await heapFloorMiB(port) };

    const email = `bench-${randomBytes(4).toString("hex")}@example.com`;
    await json(port, "POST", "/api/v1/user", { email, password: "bench password" });
    const { token } = JSON.parse(
      (await json(port, "POST", "/api/v1/user/login", { email, password: "bench password" })).body,
    );
    const before = streams.map((stream) => stream.received().length);
    const sent = Date.now();
    const created = await json(port, "POST", "/api/v1/posts", { title: "fan-out", content: "c" }, token);
    const answered = Date.now();
    let delivered = 0;
    while (Date.now() - answered < 10_000) {
      delivered = streams.filter((stream, i) =>
        stream.received().slice(before[i]).includes("event: post.created"),
      ).length;
      if (delivered === STREAMS) break;
      await sleep(5);
    }
    console.log(
      JSON.stringify(
        {
          database: process.env.DATABASE_URL === undefined ? "embedded (PGlite)" : "PostgreSQL",
          streams: STREAMS,
          idleWindowMs: IDLE_MS,
          noStreams: baseline,
          withStreams: open,
          heapPerStreamKiB: +(((open.heapFloorMiB - baseline.heapFloorMiB) * 1024) / STREAMS).toFixed(1),
          fanOut: {
            createStatus: created.status,
            responseMs: answered - sent,
            deliveredTo: delivered,
            lastArrivalAfterResponseMs: Date.now() - answered,
          },
        },
        null,
        2,
      ),
    );
  } finally {
    for (const stream of streams) stream.socket.destroy();
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
