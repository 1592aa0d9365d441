import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { setPriority } from "node:os";
import { fileURLToPath } from "node:url";
import { MIB, processMemory } from "../../support/process-memory.js";

/** What one storm asks of the service: see docs/change-events.md#bounds. */
export interface StormLoad {
  /** Streams replaying from `after` at once. */
  readonly streams: number;
  /** The client addresses the streams come from, in turn (127.0.0.2, …); none: the default one. */
  readonly addresses: readonly string[];
  /** Concurrent JSON pages of the feed (`after=0&limit=1000`). */
  readonly pages: number;
  /** Concurrent one-character searches (`q=e`, `q=a`, …). */
  readonly searches: number;
  /** Whether pages and searches come again, wave after wave, until every stream ends; else one wave. */
  readonly repeatRequests: boolean;
  /** The number of the feed's newest event: each stream reads up to it. */
  readonly lastId: number;
  /** How long a stream may take to reach `lastId`. */
  readonly streamTimeoutMs: number;
  /** How often /health is asked. */
  readonly probeEveryMs: number;
}

/** One stream's reading, as its reader saw it. */
export interface StreamOutcome {
  readonly localAddress: string | undefined;
  readonly status: number;
  readonly bytes: number;
  readonly events: number;
  readonly lastId: number;
  /** The first thing wrong: an id out of order, an early end, a timeout; undefined when none. */
  readonly problem: string | undefined;
  readonly ms: number;
}

/** One answered page or search. */
export interface RequestOutcome {
  readonly path: string;
  readonly status: number;
  /** The answer's `Retry-After`, when it has one. */
  readonly retryAfter: string | undefined;
  readonly bytes: number;
  readonly ms: number;
}

/** What a storm measured. */
export interface StormOutcome {
  readonly streams: readonly StreamOutcome[];
  readonly requests: readonly RequestOutcome[];
  readonly requestWaves: number;
  /** Every /health probe's time, in ms, in order. */
  readonly healthMs: readonly number[];
  /** The status of each failed probe (0: no answer). */
  readonly healthFailed: readonly number[];
  /** The service's RSS sampled during the storm, and its peak as the kernel counted it (VmHWM). */
  readonly memory: { readonly maxSampledRss: number; readonly peakRss: number } | undefined;
  readonly durationMs: number;
}

/** The value below which `fraction` of `values` fall (nearest rank); NaN for none. */
export function percentile(values: readonly number[], fraction: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] as number;
}

const ALPHABET = Buffer.from("abcdefghijklmnopqrstuvwxyz");

/**
 * `bytes` of random lowercase words separated by spaces: text whose trigrams vary, so that the
 * search indexes do real work, unlike one character repeated.
 */
export function randomText(bytes: number): string {
  const text = randomBytes(bytes);
  for (let i = 0; i < bytes; i++) {
    const value = text[i] as number;
    text[i] = value % 7 === 0 ? 0x20 : (ALPHABET[value % 26] as number);
  }
  return text.toString("latin1");
}

/**
 * Registers a user through the API and creates `count` posts of `bytes` bytes of content, at most
 * `concurrency` at once; answers the number of the feed's newest event after them.
 */
export async function plantPosts(
  baseUrl: string,
  {
    count,
    bytes,
    concurrency,
  }: { readonly count: number; readonly bytes: number; readonly concurrency: number },
): Promise<number> {
  const credentials = {
    email: `storm-${randomBytes(4).toString("hex")}@example.com`,
    password: "a long password",
  };
  const post = (path: string, body: unknown, token?: string) =>
    fetch(new URL(path, baseUrl), {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(token === undefined ? {} : { "x-auth-token": token }),
      },
      body: JSON.stringify(body),
    });
  const registered = await post("/api/v1/user", credentials);
  if (registered.status !== 201) throw new Error(`registration answered ${registered.status}`);
  const loggedIn = await post("/api/v1/user/login", credentials);
  if (loggedIn.status !== 200) throw new Error(`login answered ${loggedIn.status}`);
  const { token } = (await loggedIn.json()) as { token: string };
  let next = 0;
  const planter = async () => {
    for (let index = next++; index < count; index = next++) {
      const created = await post(
        "/api/v1/posts",
        { title: `storm ${index}`, content: randomText(bytes) },
        token,
      );
      await created.arrayBuffer();
      if (created.status !== 201) throw new Error(`creating post ${index} answered ${created.status}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, planter));
  return lastEventNumber(baseUrl);
}

/**
 * The number of the feed's newest event, found with pages of one event: the page after n is
 * empty exactly when n is the newest (or past it).
 */
export async function lastEventNumber(baseUrl: string): Promise<number> {
  const emptyAfter = async (after: number) => {
    const page = await fetch(new URL(`/api/v1/posts/events?after=${after}&limit=1`, baseUrl));
    if (page.status !== 200) throw new Error(`the feed's page after ${after} answered ${page.status}`);
    return ((await page.json()) as { events: unknown[] }).events.length === 0;
  };
  let low = 0;
  let high = 1;
  while (!(await emptyAfter(high))) {
    low = high;
    high *= 2;
  }
  // The page after low holds an event, the one after high none.
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (await emptyAfter(middle)) high = middle;
    else low = middle;
  }
  return (await emptyAfter(low)) ? low : high;
}

/**
 * The niceness of the storm's clients (the stream readers and the pages' and searches' client),
 * which read gigabytes: below the service's, so that on a machine of two cores the clients use
 * what the service leaves rather than take turns with it. The load they ask for is the same; the
 * prober keeps the service's priority, so that its probes time the service, not its own wait.
 */
export const CLIENT_NICENESS = 10;

// A child process of the storm, with the message it answers once done; at `niceness` if given.
function child<T>(
  file: string,
  niceness?: number,
): {
  readonly send: (message: unknown) => void;
  readonly answer: Promise<T>;
  readonly pid: number | undefined;
} {
  const process = fork(fileURLToPath(new URL(file, import.meta.url)), [], { execArgv: [], stdio: "inherit" });
  if (niceness !== undefined && process.pid !== undefined) setPriority(process.pid, niceness);
  const answer = new Promise<T>((resolve, reject) => {
    process.once("message", (message) => resolve(message as T));
    process.once("exit", (code) => reject(new Error(`${file} exited (${code}) before it answered`)));
  });
  // Settled here too, so that a child that fails while another is awaited is no unhandled rejection.
  answer.catch(() => {});
  // A child that is done has left: a message to stop it then has nobody to go to.
  const send = (message: unknown) => {
    if (process.connected) process.send(message as never);
  };
  return { send, answer, pid: process.pid };
}

/**
 * Runs one storm against the service at `baseUrl`: the streams, pages and searches of `load` at
 * once, while a prober asks /health; each in a child process of its own, so that this process
 * (which samples the RSS of `servicePid`, when given, every 50 ms) measures and does nothing else.
 */
export async function runStorm(baseUrl: string, load: StormLoad, servicePid?: number): Promise<StormOutcome> {
  const started = performance.now();
  let maxSampledRss = 0;
  const sample = () => {
    if (servicePid !== undefined) maxSampledRss = Math.max(maxSampledRss, processMemory(servicePid).rss);
  };
  const sampler = setInterval(sample, 50);
  const prober = child<{ ms: number[]; failed: number[] }>("./prober.mjs");
  prober.send({ baseUrl, everyMs: load.probeEveryMs, timeoutMs: 5000 });
  const paths = [
    ...Array.from({ length: load.pages }, () => "/api/v1/posts/events?after=0&limit=1000"),
    ...Array.from({ length: load.searches }, (_, i) => `/api/v1/posts?q=${"eaiotnsrhl"[i % 10]}`),
  ];
  const requests = child<{ answers: RequestOutcome[]; waves: number }>("./requests.mjs", CLIENT_NICENESS);
  requests.send({ baseUrl, paths, once: !load.repeatRequests });
  // Two readers, so that reading the streams takes both cores when it needs them.
  const readers = [0, 1].map(() =>
    child<{ outcomes: StreamOutcome[] }>("./stream-readers.mjs", CLIENT_NICENESS),
  );
  const addressOf = (i: number) =>
    load.addresses.length === 0 ? null : load.addresses[i % load.addresses.length];
  for (const [r, reader] of readers.entries()) {
    reader.send({
      baseUrl,
      after: 0,
      lastId: load.lastId,
      timeoutMs: load.streamTimeoutMs,
      localAddresses: Array.from({ length: load.streams }, (_, i) => i)
        .filter((i) => i % readers.length === r)
        .map(addressOf),
    });
  }
  try {
    const streams = (await Promise.all(readers.map((reader) => reader.answer))).flatMap(
      (answer) => answer.outcomes,
    );
    requests.send({ stop: true });
    const { answers, waves } = await requests.answer;
    prober.send({ stop: true });
    const health = await prober.answer;
    sample();
    return {
      streams,
      requests: answers,
      requestWaves: waves,
      healthMs: health.ms,
      healthFailed: health.failed,
      memory:
        servicePid === undefined ? undefined : { maxSampledRss, peakRss: processMemory(servicePid).peak },
      durationMs: performance.now() - started,
    };
  } finally {
    clearInterval(sampler);
    for (const { pid } of [prober, requests, ...readers]) {
      try {
        if (pid !== undefined) process.kill(pid);
      } catch {
        // Gone already, as it should be.
      }
    }
  }
}

/**
 * Whether `request` was refused for want of room in the budget of large posts within its wait
 * (docs/posts.md#large-posts): `503` with `Retry-After`, as a busy instance answers by design.
 */
export function refusedForRoom(request: RequestOutcome): boolean {
  return request.status === 503 && request.retryAfter !== undefined;
}

/** The figures of `outcome` on a few lines, for a log or a failure message. */
export function describeStorm(outcome: StormOutcome): string {
  const streamed = outcome.streams.reduce((sum, stream) => sum + stream.bytes, 0);
  const statuses = new Map<string, number>();
  for (const { path, status } of outcome.requests) {
    const key = `${path.startsWith("/api/v1/posts/events") ? "page" : "search"} ${status}`;
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
  }
  const ms = (value: number) => `${Math.round(value)} ms`;
  return [
    `storm: ${outcome.streams.length} streams, ${(streamed / 1024 ** 3).toFixed(1)} GiB streamed in ${(outcome.durationMs / 1000).toFixed(1)} s`,
    `  streams complete and in order: ${outcome.streams.filter((s) => s.status === 200 && s.problem === undefined).length}` +
      `, refused 429: ${outcome.streams.filter((s) => s.status === 429).length}` +
      `, first problem: ${outcome.streams.find((s) => s.problem !== undefined)?.problem ?? "none"}`,
    `  requests in ${outcome.requestWaves} waves: ${[...statuses].map(([key, n]) => `${key}×${n}`).join(", ")}` +
      `; slowest ${ms(Math.max(0, ...outcome.requests.map((r) => r.ms)))}`,
    `  /health: ${outcome.healthMs.length} probes, p50 ${ms(percentile(outcome.healthMs, 0.5))}, p99 ${ms(percentile(outcome.healthMs, 0.99))}, max ${ms(Math.max(0, ...outcome.healthMs))}, failed ${outcome.healthFailed.length}`,
    outcome.memory === undefined
      ? "  RSS: not measured (no pid)"
      : `  RSS: peak ${(outcome.memory.peakRss / MIB).toFixed(0)} MiB (VmHWM), highest sampled ${(outcome.memory.maxSampledRss / MIB).toFixed(0)} MiB`,
  ].join("\n");
}
