/**
 * The soak's client: a process of its own (so that its CPU and memory never count as the
 * service's), running a closed-loop mix of reads and writes against the service for a fixed
 * time and writing one JSON line per request to a file. Started by soak.ts with its settings in
 * the SOAK_LOAD environment variable (a JSON {@link LoadSettings}).
 */

import { once } from "node:events";
import { createWriteStream, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { createParser } from "eventsource-parser";
import { CATCH_UP_MS } from "./soak-analysis.js";

/** One client of the mix: a user, its token, and the posts it may patch. */
export interface LoadWorker {
  readonly token: string;
  readonly postIds: readonly number[];
}

/** What soak.ts hands to this process. */
export interface LoadSettings {
  readonly baseUrl: string;
  readonly durationMs: number;
  readonly workers: readonly LoadWorker[];
  /** Where the request records go, one JSON line each. */
  readonly outFile: string;
  /** Give up on one request after this long; the record then has status -1. */
  readonly requestTimeoutMs: number;
  /** Each client waits this long after each answer: 0 drives the service as hard as it answers. */
  readonly thinkMs: number;
  /** Where what the change-feed followers saw goes (a JSON {@link FeedObservation}). */
  readonly feedFile: string;
}

/** What one follower of the change feed saw, event by event, over the whole run. */
export interface FeedFollowerSummary {
  /** Requests that opened a stream or read a page (answered 200). */
  readonly requests: number;
  /** Requests answered otherwise (503 while the database is away) or not at all; retried. */
  readonly refused: number;
  readonly events: number;
  /** Numbers skipped between consecutive events, and events whose number was not above the last. */
  readonly gaps: number;
  readonly repeats: number;
  /** The last event's number (0: none). */
  readonly last: number;
  /** `event: reset` messages (resuming before the oldest kept event): none expected. */
  readonly resets: number;
  /** The subjects (post ids) of every `post.created` event. */
  readonly createdSubjects: readonly number[];
}

/** The two followers of the change feed: a stream dropped and resumed with Last-Event-ID, and JSON pages. */
export interface FeedObservation {
  readonly stream: FeedFollowerSummary & {
    /** Times the stream was dropped on purpose and resumed with Last-Event-ID. */
    readonly resumes: number;
    /**
     * How long the stream took to reach what the pages had read, in the longest case and how
     * often more than 5 s (measured to a second, each time the pages reader looked), outages and
     * snapshots included.
     */
    readonly longestLagMs: number;
    readonly lagsOver5s: number;
    /**
     * After the load: how long the open stream took to reach the feed's last event, or undefined
     * when it had not within {@link CATCH_UP_MS} (it was then resumed to read the rest).
     */
    readonly caughtUpMs: number | undefined;
  };
  readonly pages: FeedFollowerSummary;
}

/**
 * Which kind of request a record is: "search" is a page with `q`; "retry" is a POST sent again
 * with the Idempotency-Key and body of the "create" just before it, as a client does when it
 * cannot tell whether its first attempt arrived.
 */
export type Operation = "list" | "search" | "read" | "create" | "retry" | "patch";

/** One request as the client saw it. */
export interface RequestRecord {
  readonly op: Operation;
  /** Epoch milliseconds when the request was sent and when its answer (or failure) came. */
  readonly sentAt: number;
  readonly doneAt: number;
  /** HTTP status; 0 for a network error (no answer at all), -1 for a client timeout. */
  readonly status: number;
  /** The post the request was about; for a 201, the id its Location names. */
  readonly postId?: number;
  /** For a PATCH answered 200: the post's updatedAt in the answer (UTC, no zone). */
  readonly updatedAt?: string;
  /** For a create with an Idempotency-Key and its retry: the key. */
  readonly key?: string;
}

// The mix: mostly reads, as a blog is used, with a steady stream of writes of both kinds. One
// create in four carries an Idempotency-Key and is sent twice.
const MIX: readonly (readonly [Operation, number])[] = [
  ["list", 0.35],
  ["search", 0.1],
  ["read", 0.2],
  ["create", 0.2],
  ["patch", 0.15],
];
/** Words the titles are made of and searches look for: few, so that searches find posts. */
const WORDS = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron", "iris", "juniper"];
/** Share of searches for a term no post holds: pages of their own, never read twice. */
const UNIQUE_SEARCH_SHARE = 0.2;

function pick(): Operation {
  let draw = Math.random();
  for (const [op, weight] of MIX) {
    draw -= weight;
    if (draw < 0) return op;
  }
  return "list";
}

function randomOf<T>(values: readonly T[]): T | undefined {
  return values[Math.floor(Math.random() * values.length)];
}

async function runWorker(
  settings: LoadSettings,
  worker: LoadWorker,
  index: number,
  record: (entry: RequestRecord) => void,
  deadline: number,
): Promise<void> {
  const own = [...worker.postIds];
  const known = [...worker.postIds];
  let sequence = 0;
  while (Date.now() < deadline) {
    const op = pick();
    const postId = op === "patch" ? randomOf(own) : op === "read" ? randomOf(known) : undefined;
    let path = "/api/v1/posts?size=20";
    let init: RequestInit = {};
    const json = (method: string, body: unknown): RequestInit => ({
      method,
      headers: { "content-type": "application/json", "x-auth-token": worker.token },
      body: JSON.stringify(body),
    });
    if (op === "read") path = `/api/v1/posts/${postId}`;
    if (op === "search") {
      const term = Math.random() < UNIQUE_SEARCH_SHARE ? `none${index}x${sequence}` : randomOf(WORDS);
      path = `/api/v1/posts?size=20&q=${term}`;
    }
    const keyed = op === "create" && sequence % 4 === 0;
    const key = keyed ? `soak-${index}-${sequence}-${Date.now()}` : undefined;
    if (op === "create") {
      path = "/api/v1/posts";
      init = json("POST", {
        title: `soak ${randomOf(WORDS)} ${index}-${sequence}`,
        content: `written by worker ${index}`,
      });
      if (key !== undefined)
        init.headers = { ...(init.headers as Record<string, string>), "idempotency-key": key };
    }
    if (op === "patch") {
      path = `/api/v1/posts/${postId}`;
      init = json(
        "PATCH",
        sequence % 2 === 0 ? { title: `patched ${index}-${sequence}` } : { content: `c${sequence}` },
      );
    }
    sequence++;

    const sentAt = Date.now();
    let status: number;
    let id = postId;
    let updatedAt: string | undefined;
    try {
      const response = await fetch(`${settings.baseUrl}${path}`, {
        ...init,
        signal: AbortSignal.timeout(settings.requestTimeoutMs),
      });
      status = response.status;
      const body = await response.text();
      if (op === "create" && status === 201) {
        id = Number(/\/(\d+)$/.exec(response.headers.get("location") ?? "")?.[1]);
        own.push(id);
        known.push(id);
      }
      if (op === "patch" && status === 200) updatedAt = (JSON.parse(body) as { updatedAt: string }).updatedAt;
    } catch (error) {
      status = (error as Error).name === "TimeoutError" ? -1 : 0;
    }
    record({
      op,
      sentAt,
      doneAt: Date.now(),
      status,
      ...(id === undefined ? {} : { postId: id }),
      ...(updatedAt === undefined ? {} : { updatedAt }),
      ...(key === undefined ? {} : { key }),
    });
    if (key !== undefined) record(await retry(settings, path, init, key, id));
    if (settings.thinkMs > 0) await sleep(settings.thinkMs);
  }
}

/** The same keyed POST again: it must answer the post the first one made (201, Idempotent-Replayed). */
async function retry(
  settings: LoadSettings,
  path: string,
  init: RequestInit,
  key: string,
  firstId: number | undefined,
): Promise<RequestRecord> {
  const sentAt = Date.now();
  let status: number;
  let id = firstId;
  try {
    const response = await fetch(`${settings.baseUrl}${path}`, {
      ...init,
      signal: AbortSignal.timeout(settings.requestTimeoutMs),
    });
    status = response.status;
    await response.arrayBuffer();
    if (status === 201) id = Number(/\/(\d+)$/.exec(response.headers.get("location") ?? "")?.[1]);
  } catch (error) {
    status = (error as Error).name === "TimeoutError" ? -1 : 0;
  }
  return {
    op: "retry",
    sentAt,
    doneAt: Date.now(),
    status,
    key,
    ...(id === undefined ? {} : { postId: id }),
  };
}

/** Counts a follower's events in order: every number must be the last one plus one. */
class FeedTally {
  requests = 0;
  refused = 0;
  events = 0;
  gaps = 0;
  repeats = 0;
  last = 0;
  resets = 0;
  readonly createdSubjects: number[] = [];

  see(number: number, type: string, subject: string | undefined): void {
    this.events++;
    if (number <= this.last) this.repeats++;
    else this.gaps += number - this.last - 1;
    this.last = Math.max(this.last, number);
    if (type === "post.created" && subject !== undefined) this.createdSubjects.push(Number(subject));
  }

  summary(): FeedFollowerSummary {
    const { requests, refused, events, gaps, repeats, last, resets, createdSubjects } = this;
    return { requests, refused, events, gaps, repeats, last, resets, createdSubjects };
  }
}

const FEED = "/api/v1/posts/events";
/** A stream is dropped on purpose after a random time in this range, then resumed. */
const STREAM_LIFE_MS = [5_000, 30_000] as const;
const PAGE_LIMIT = 1000;

/**
 * An SSE client of the change feed from event 1: each connection is dropped after a few seconds
 * and opened again with `Last-Event-ID`, as an EventSource does after a network failure; a refused
 * connection (503 while the database is away) is tried again half a second later. Runs until
 * `stop()` resolves `true`.
 */
async function followStream(settings: LoadSettings, tally: FeedTally, done: () => boolean): Promise<number> {
  let resumes = -1;
  while (!done()) {
    const abort = new AbortController();
    const life = STREAM_LIFE_MS[0] + Math.random() * (STREAM_LIFE_MS[1] - STREAM_LIFE_MS[0]);
    const timer = setTimeout(() => abort.abort(), life);
    const stopper = setInterval(() => done() && abort.abort(), 200);
    try {
      const response = await fetch(`${settings.baseUrl}${FEED}`, {
        headers: { accept: "text/event-stream", "last-event-id": String(tally.last) },
        signal: abort.signal,
      });
      if (response.status !== 200 || response.body === null) {
        tally.refused++;
        await response.arrayBuffer().catch(() => undefined);
      } else {
        tally.requests++;
        resumes++;
        const parser = createParser({
          onEvent: ({ id, event, data }) => {
            if (event === "reset") tally.resets++;
            if (id === undefined) return;
            const subject =
              event === "post.created" ? (JSON.parse(data) as { subject?: string }).subject : undefined;
            tally.see(Number(id), event ?? "message", subject);
          },
        });
        const decoder = new TextDecoder();
        for await (const chunk of response.body as AsyncIterable<Uint8Array>)
          parser.feed(decoder.decode(chunk, { stream: true }));
      }
    } catch (error) {
      if ((error as Error).name !== "AbortError") tally.refused++;
    } finally {
      clearTimeout(timer);
      clearInterval(stopper);
    }
    if (!abort.signal.aborted) await sleep(500);
  }
  return Math.max(0, resumes);
}

/** Reads one JSON page after `tally.last`; answers how many events it held (undefined: refused). */
async function readPage(settings: LoadSettings, tally: FeedTally): Promise<number | undefined> {
  try {
    const response = await fetch(`${settings.baseUrl}${FEED}?after=${tally.last}&limit=${PAGE_LIMIT}`, {
      signal: AbortSignal.timeout(settings.requestTimeoutMs),
    });
    if (response.status !== 200) {
      tally.refused++;
      await response.arrayBuffer();
      return undefined;
    }
    tally.requests++;
    const page = (await response.json()) as {
      events: { id: string; type: string; subject?: string }[];
    };
    for (const event of page.events) tally.see(Number(event.id), event.type, event.subject);
    return page.events.length;
  } catch {
    tally.refused++;
    return undefined;
  }
}

async function main(): Promise<void> {
  const settings = JSON.parse(process.env.SOAK_LOAD ?? "") as LoadSettings;
  const out = createWriteStream(settings.outFile);
  let requests = 0;
  const record = (entry: RequestRecord) => {
    requests++;
    out.write(`${JSON.stringify(entry)}\n`);
  };
  const startedAt = Date.now();
  const deadline = startedAt + settings.durationMs;
  // The change feed's followers run beside the clients: a stream and a reader of JSON pages.
  const stream = new FeedTally();
  const pages = new FeedTally();
  let writing = true;
  let draining = false;
  const lag = { longestMs: 0, over5s: 0, since: 0, target: 0 };
  const paging = (async () => {
    while (writing) {
      const read = await readPage(settings, pages);
      const now = Date.now();
      if (lag.since !== 0 && stream.last >= lag.target) {
        const ms = now - lag.since;
        lag.longestMs = Math.max(lag.longestMs, ms);
        if (ms > 5_000) lag.over5s++;
        lag.since = 0;
      }
      if (lag.since === 0 && stream.last < pages.last) {
        lag.since = now;
        lag.target = pages.last;
      }
      if (read !== PAGE_LIMIT) await sleep(1_000);
    }
  })();
  const streaming = followStream(settings, stream, () => draining);
  await Promise.all(
    settings.workers.map((worker, index) => runWorker(settings, worker, index, record, deadline)),
  );
  writing = false;
  await paging;
  // Every write has been answered: read the pages to the end, then give the stream until it has
  // seen as far (each event reaches open streams within a second of its change).
  const drainBy = Date.now() + 30_000;
  while ((await readPage(settings, pages)) !== 0 && Date.now() < drainBy) await sleep(100);
  const drainedAt = Date.now();
  while (stream.last < pages.last && Date.now() < drainedAt + CATCH_UP_MS) await sleep(100);
  const caughtUpMs = stream.last >= pages.last ? Date.now() - drainedAt : undefined;
  draining = true;
  let resumes = await streaming;
  if (caughtUpMs === undefined) {
    // A stall of the open stream, not a gap: resumed, it must give the rest, in order.
    let resumed = false;
    const resumeBy = Date.now() + CATCH_UP_MS;
    resumes +=
      1 +
      (await followStream(settings, stream, () => {
        resumed ||= stream.last >= pages.last;
        return resumed || Date.now() > resumeBy;
      }));
  }
  const observation: FeedObservation = {
    stream: {
      ...stream.summary(),
      resumes,
      longestLagMs: lag.longestMs,
      lagsOver5s: lag.over5s,
      caughtUpMs,
    },
    pages: pages.summary(),
  };
  writeFileSync(settings.feedFile, JSON.stringify(observation));
  out.end();
  await once(out, "finish");
  process.stdout.write(`${JSON.stringify({ startedAt, endedAt: Date.now(), requests })}\n`);
}

await main();
