import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerAndLogIn } from "../support/register-and-log-in.js";
import type { ServiceProcess } from "../support/service-process.js";
import { isListeningLine, spawnService } from "../support/service-process.js";

// The default BODY_LIMIT (16 MiB), less room for the title and the JSON around the content.
const LARGE_CONTENT_BYTES = 16 * 1024 * 1024 - 4096;
// What another client may wait while the large post is written or read: the database's
// statements never hold the event loop (they take seconds here). A second rather than the
// 250 ms docs/operations.md aims at, because the request thread itself still decodes and
// parses 16 MiB of JSON, which takes up to half a second on shared cores.
const BOUND_MS = 1000;
const PROBE_EVERY_MS = 20;

interface LargePostOutcome {
  readonly bytes: number;
  readonly created: number;
  readonly createdMs: number;
  readonly read: number;
  readonly readMs: number;
  readonly sameContent: boolean;
}

/**
 * Creates a post of `bytes` bytes of content, then reads it back, and posts a
 * {@link LargePostOutcome}. It runs in a thread of its own, so that building and parsing 16 MiB
 * of JSON delays no probe of the test's thread: the probes time the service alone.
 */
const LARGE_POST_CLIENT = `
const { parentPort, workerData } = require("node:worker_threads");
const { url, token, bytes } = workerData;
// Words rather than one repeated character, so that the search index has trigrams to store.
const words = "large post content with trigrams 본문 ";
const some = words.repeat(Math.ceil(bytes / Buffer.byteLength(words))).slice(0, bytes / 4);
const content = some + "x".repeat(bytes - Buffer.byteLength(some));
const body = JSON.stringify({ title: "large", content });
(async () => {
  const started = performance.now();
  const created = await fetch(url + "/api/v1/posts", {
    method: "POST",
    headers: { "content-type": "application/json", "x-auth-token": token },
    body,
  });
  await created.arrayBuffer();
  const createdMs = performance.now() - started;
  const read = await fetch(created.headers.get("location"));
  const post = await read.json();
  parentPort.postMessage({
    bytes: Buffer.byteLength(content),
    created: created.status,
    createdMs,
    read: read.status,
    readMs: performance.now() - started - createdMs,
    sameContent: post.content === content,
  });
})();
`;

interface Probe {
  readonly path: string;
  readonly ms: number;
  readonly status: number;
}

/**
 * Requests `paths` one after the other, a new round every {@link PROBE_EVERY_MS}, until
 * `stop` settles; answers how long each took.
 */
async function probeUntil(
  baseUrl: string,
  paths: readonly string[],
  stop: Promise<unknown>,
): Promise<Probe[]> {
  const probes: Probe[] = [];
  let stopped = false;
  void stop.then(
    () => {
      stopped = true;
    },
    () => {
      stopped = true;
    },
  );
  while (!stopped) {
    for (const path of paths) {
      const started = performance.now();
      const response = await fetch(`${baseUrl}${path}`);
      await response.arrayBuffer();
      probes.push({ path, ms: performance.now() - started, status: response.status });
    }
    await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS));
  }
  return probes;
}

describe("the embedded database (PGlite) and a post of BODY_LIMIT, as a real process", () => {
  let dataDir: string;
  let service: ServiceProcess | undefined;
  let url = "";

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "posts-stall-"));
    service = spawnService([], { HOST: "127.0.0.1", PORT: "0", DATA_DIR: dataDir });
    // The first start runs initdb, which takes long on shared cores.
    const listening = await service.waitForLog(isListeningLine, { timeoutMs: 110_000 });
    url = `http://127.0.0.1:${String(listening.port)}`;
  }, 120_000);
  afterAll(async () => {
    service?.child.kill("SIGTERM");
    const timer = setTimeout(() => service?.child.kill("SIGKILL"), 15_000);
    await service?.exited;
    clearTimeout(timer);
    await rm(dataDir, { recursive: true, force: true });
  });

  it(`keeps /health within ${BOUND_MS} ms while a post of BODY_LIMIT is written and read`, async () => {
    const { token } = await registerAndLogIn(url);
    const small = await fetch(`${url}/api/v1/posts`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-auth-token": token },
      body: JSON.stringify({ title: "small", content: "a small post" }),
    });
    expect(small.status).toBe(201);
    const smallPath = new URL(small.headers.get("location") ?? "").pathname;

    const work = new Promise<LargePostOutcome>((resolve, reject) => {
      const client = new Worker(LARGE_POST_CLIENT, {
        eval: true,
        workerData: { url, token, bytes: LARGE_CONTENT_BYTES },
      });
      client.once("message", resolve);
      client.once("error", reject);
      client.once("exit", (code) => reject(new Error(`the large post's client exited (${code})`)));
    });
    const started = performance.now();
    const probes = await probeUntil(url, ["/health", smallPath], work);
    const outcome = await work;

    expect(outcome).toMatchObject({ bytes: LARGE_CONTENT_BYTES, created: 201, read: 200, sameContent: true });
    expect(probes.every((probe) => probe.status === 200)).toBe(true);
    const slowest = (path: string) =>
      Math.round(Math.max(...probes.filter((probe) => probe.path === path).map((probe) => probe.ms)));
    const summary =
      `${probes.length} probes over ${Math.round(performance.now() - started)} ms ` +
      `(created after ${Math.round(outcome.createdMs)} ms, read in ${Math.round(outcome.readMs)} ms); ` +
      `slowest /health ${slowest("/health")} ms, slowest GET of another post ${slowest(smallPath)} ms`;
    console.log(summary);
    expect(slowest("/health"), summary).toBeLessThan(BOUND_MS);
  }, 180_000);
});
