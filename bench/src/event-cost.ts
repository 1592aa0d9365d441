/**
 * `pnpm bench:events`: what change events cost writes, and how fast they travel. Starts the built
 * service on a database of its own on DATABASE_URL's server (default
 * postgres://postgres@127.0.0.1:5432/postgres) and measures, each for WINDOW_MS (default 15000)
 * with CLIENTS concurrent clients (default 16): POSTs per second and PATCHes per second with
 * events on, then with the triggers that write them disabled (events off, the service unchanged),
 * then on again; then the delay from each of DELAYS (default 300) sequential POSTs' response to its
 * event on an open stream (p50, p99); then how many events per second one stream reader gets
 * when it resumes from the start of everything written. Prints JSON; bench/RESULTS.md keeps it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { recreateDatabase, withDatabase } from "./load/database.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SERVER = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const DATABASE = "posts_bench_events";
const WINDOW_MS = Number(process.env.WINDOW_MS ?? "15000");
const CLIENTS = Number(process.env.CLIENTS ?? "16");
const DELAYS = Number(process.env.DELAYS ?? "300");

function startService(env: Record<string, string>): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, ["packages/app/dist/main.js"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let output = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      if (output.length < 100_000) output += chunk;
      const port = /"port":(\d+)/.exec(output)?.[1];
      if (port !== undefined) resolve({ child, base: `http://127.0.0.1:${port}` });
    });
    child.once("exit", (code) => reject(new Error(`the service exited (${code}) before listening`)));
  });
}

const json = (token?: string) => ({
  "content-type": "application/json",
  ...(token === undefined ? {} : { "x-auth-token": token }),
});

async function signUp(base: string): Promise<string> {
  const email = `bench-${randomBytes(6).toString("hex")}@example.com`;
  const body = JSON.stringify({ email, password: "bench password" });
  await fetch(`${base}/api/v1/user`, { method: "POST", headers: json(), body });
  const login = await fetch(`${base}/api/v1/user/login`, { method: "POST", headers: json(), body });
  return ((await login.json()) as { token: string }).token;
}

async function createPost(base: string, token: string, title: string): Promise<number> {
  const response = await fetch(`${base}/api/v1/posts`, {
    method: "POST",
    headers: json(token),
    body: JSON.stringify({ title, content: "bench content of a modest length, like a short post." }),
  });
  if (response.status !== 201) throw new Error(`POST answered ${response.status}`);
  return Number(response.headers.get("location")?.split("/").at(-1));
}

/** Requests per second of `request` from CLIENTS loops over WINDOW_MS. */
async function throughput(request: (client: number, i: number) => Promise<void>): Promise<number> {
  const deadline = Date.now() + WINDOW_MS;
  let done = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let i = 0; Date.now() < deadline; i++) {
        await request(client, i);
        done++;
      }
    }),
  );
  return +(done / (WINDOW_MS / 1000)).toFixed(1);
}

async function writes(base: string, tokens: readonly string[], label: string) {
  const posts = await throughput(async (client, i) => {
    await createPost(base, tokens[client] as string, `${label} ${client}-${i}`);
  });
  const ids = await Promise.all(
    tokens.map((token, client) => createPost(base, token, `${label} patched ${client}`)),
  );
  const patches = await throughput(async (client, i) => {
    const response = await fetch(`${base}/api/v1/posts/${ids[client]}`, {
      method: "PATCH",
      headers: json(tokens[client]),
      body: JSON.stringify({ title: `${label} v${i}` }),
    });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`PATCH answered ${response.status}`);
  });
  return { postsPerSecond: posts, patchesPerSecond: patches };
}

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

/** Reads a stream until `until` holds of the number of events received; answers arrival times by subject. */
function streamReader(url: string, headers: Record<string, string>) {
  const abort = new AbortController();
  const arrivals = new Map<string, number>();
  let count = 0;
  let lastId = 0;
  const reading = (async () => {
    const response = await fetch(url, {
      headers: { accept: "text/event-stream", ...headers },
      signal: abort.signal,
    });
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of response.body ?? []) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let end = buffer.indexOf("\n\n");
        while (end >= 0) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = /^id: (\d+)$/m.exec(message)?.[1];
          if (id !== undefined) {
            count++;
            lastId = Number(id);
            const subject = /"subject":"(\d+)"/.exec(message)?.[1];
            if (subject !== undefined) arrivals.set(subject, Date.now());
          }
          end = buffer.indexOf("\n\n");
        }
      }
    } catch {
      // Aborted.
    }
  })();
  return {
    arrivals,
    count: () => count,
    lastId: () => lastId,
    close: async () => {
      abort.abort();
      await reading;
    },
  };
}

async function main() {
  await recreateDatabase(SERVER, DATABASE);
  const url = withDatabase(SERVER, DATABASE);
  const { child, base } = await startService({
    DATABASE_URL: url,
    JWT_SECRET: randomBytes(48).toString("base64url"),
    LOGIN_THROTTLE_MAX: "100000",
  });
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const tokens = await Promise.all(Array.from({ length: CLIENTS }, () => signUp(base)));
    await writes(base, tokens, "warm-up");
    const on = await writes(base, tokens, "on");
    await admin.query("ALTER TABLE posts DISABLE TRIGGER posts_record_insert_delete");
    await admin.query("ALTER TABLE posts DISABLE TRIGGER posts_record_update");
    const off = await writes(base, tokens, "off");
    await admin.query("ALTER TABLE posts ENABLE TRIGGER posts_record_insert_delete");
    await admin.query("ALTER TABLE posts ENABLE TRIGGER posts_record_update");
    // On again, so that a table grown by the windows before does not favour either side.
    const onAgain = await writes(base, tokens, "on again");

    const stream = streamReader(`${base}/api/v1/posts/events`, {});
    await sleep(500);
    const delays: number[] = [];
    for (let i = 0; i < DELAYS; i++) {
      const id = String(await createPost(base, tokens[0] as string, `delay ${i}`));
      const answered = Date.now();
      while (!stream.arrivals.has(id) && Date.now() - answered < 10_000) await sleep(1);
      delays.push((stream.arrivals.get(id) ?? Number.NaN) - answered);
    }
    await stream.close();
    delays.sort((a, b) => a - b);

    const { rows } = await admin.query<{ last: string }>("SELECT max(number) AS last FROM post_events");
    const total = Number(rows[0]?.last);
    const started = Date.now();
    const reader = streamReader(`${base}/api/v1/posts/events`, { "last-event-id": "0" });
    while (reader.lastId() < total && Date.now() - started < 120_000) await sleep(10);
    const seconds = (Date.now() - started) / 1000;
    await reader.close();

    console.log(
      JSON.stringify(
        {
          clients: CLIENTS,
          windowMs: WINDOW_MS,
          eventsOn: on,
          eventsOff: off,
          eventsOnAgain: onAgain,
          ratio: {
            posts: +((on.postsPerSecond + onAgain.postsPerSecond) / 2 / off.postsPerSecond).toFixed(3),
            patches: +((on.patchesPerSecond + onAgain.patchesPerSecond) / 2 / off.patchesPerSecond).toFixed(
              3,
            ),
          },
          delayResponseToStreamMs: {
            samples: delays.length,
            p50: percentile(delays, 50),
            p99: percentile(delays, 99),
            max: delays.at(-1),
          },
          oneReader: {
            events: reader.count(),
            seconds,
            eventsPerSecond: Math.round(reader.count() / seconds),
          },
        },
        null,
        2,
      ),
    );
  } finally {
    await admin.end();
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  }
}

await main();
