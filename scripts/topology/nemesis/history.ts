import { setTimeout as sleep } from "node:timers/promises";
import { signUp } from "../sign-up.js";

/**
 * A Jepsen-style history of the service under faults: a steady load of keyed creates, patches,
 * deletes and reads, every request and its answer recorded, and a checker over the history,
 * the final database and the change feed. Each post belongs to one worker, which sends its
 * requests one after the other, so a post's operations are totally ordered in time: what a
 * read or the final database may show of it is the result of its last acknowledged write, or
 * of any write attempted after that one whose outcome is unknown (a 503, a lost answer).
 */

/** Each write or read the load sent. */
export type Kind = "create" | "patch" | "delete" | "read";

/** One request and its answer. `status` 0: no HTTP answer (`error` says why). */
export interface Operation {
  readonly worker: number;
  readonly kind: Kind;
  /** The post's idempotency key, which names it in the history whatever its id. */
  readonly key: string;
  /** The title the write sends (create, patch), or that a read answered. */
  title?: string;
  readonly invokedAt: number;
  completedAt: number;
  status: number;
  retryAfter?: string | null;
  /** The post's id (known from the create's Location). */
  id?: string;
  error?: string;
  /** For a read: what the post may show, from the writes before it (a title, `null` for absent). */
  allowed?: (string | null)[];
}

/** What a post may look like now: a title, or `null` for absent. */
type Allowed = Set<string | null>;

interface Post {
  readonly key: string;
  id?: string;
  /** Versions made so far (the n of each title `<key> v<n>`). */
  version: number;
  allowed: Allowed;
  /** Whether a create of it was acknowledged (201). */
  created: boolean;
  /** Whether its delete was acknowledged, or a later delete found it gone. */
  deleted: boolean;
  /** A write whose outcome is unknown, to be sent again (create, delete) before anything else. */
  pending?: "create" | "delete";
}

/** A load's options. */
export interface LoadOptions {
  /** HAProxy in front of the instances. */
  readonly url: string;
  readonly workers: number;
  /** Each worker's pause between requests, sparing the shared machine. */
  readonly pauseMs: number;
  /** Longer than the service's request timeout: an answer later than this is a hang. */
  readonly timeoutMs: number;
}

/** A running load: its history, and how to stop it. */
export interface Load {
  readonly history: Operation[];
  /** Stops the workers after the requests in flight, and answers the history. */
  stop(): Promise<Operation[]>;
}

/** Registers a user and logs in (retrying until the service answers), answering the token. */
/** Starts `options.workers` workers, each registering its own user and then looping. */
export async function startLoad(options: LoadOptions): Promise<Load> {
  const history: Operation[] = [];
  const tokens = await Promise.all(
    Array.from({ length: options.workers }, (_, worker) =>
      signUp(options.url, { label: `nemesis-${worker}` }),
    ),
  );
  let running = true;
  const loops = tokens.map((token, worker) => runWorker(worker, token, options, history, () => running));
  return {
    history,
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return history;
    },
  };
}

async function runWorker(
  worker: number,
  token: string,
  options: LoadOptions,
  history: Operation[],
  running: () => boolean,
): Promise<void> {
  const posts: Post[] = [];
  let made = 0;
  while (running()) {
    const unsettled = posts.find((post) => post.pending !== undefined);
    const live = posts.filter((post) => post.created && !post.deleted);
    const dice = Math.random();
    if (unsettled?.pending === "create") await create(unsettled);
    else if (unsettled?.pending === "delete") await remove(unsettled);
    else if (live.length === 0 || dice < 0.3) {
      const post: Post = {
        key: `w${worker}-${made++}-${Math.random().toString(36).slice(2, 8)}`,
        version: 0,
        allowed: new Set([null]),
        created: false,
        deleted: false,
      };
      posts.push(post);
      await create(post);
    } else {
      const post = live[Math.floor(Math.random() * live.length)] as Post;
      if (dice < 0.6) await patch(post);
      else if (dice < 0.68) await remove(post);
      else await read(post);
    }
    await sleep(options.pauseMs);
  }

  async function send(
    kind: Kind,
    post: Post,
    method: string,
    path: string,
    body?: { readonly title?: string; readonly content?: string },
    extra: Record<string, string> = {},
  ) {
    const operation: Operation = {
      worker,
      kind,
      key: post.key,
      ...(body?.title === undefined ? {} : { title: body.title }),
      invokedAt: performance.now(),
      completedAt: 0,
      status: 0,
      ...(post.id === undefined ? {} : { id: post.id }),
    };
    history.push(operation);
    try {
      const response = await fetch(`${options.url}${path}`, {
        method,
        headers: {
          "x-auth-token": token,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...extra,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      const text = await response.text();
      operation.status = response.status;
      operation.retryAfter = response.headers.get("retry-after");
      operation.completedAt = performance.now();
      if (response.status >= 500) operation.error = text.slice(0, 300);
      return { response, text, operation };
    } catch (error) {
      operation.completedAt = performance.now();
      operation.error = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return { response: undefined, text: "", operation };
    }
  }

  async function create(post: Post): Promise<void> {
    const title = `${post.key} v0`;
    const { response, operation } = await send(
      "create",
      post,
      "POST",
      "/api/v1/posts",
      { title, content: `key:${post.key}` },
      { "idempotency-key": post.key },
    );
    if (response?.status === 201) {
      const id = /\/api\/v1\/posts\/(\d+)$/.exec(response.headers.get("location") ?? "")?.[1];
      if (id !== undefined) {
        post.id = id;
        operation.id = id;
      }
      post.created = true;
      post.allowed = new Set([title]);
      delete post.pending;
    } else if (response !== undefined && response.status < 500) {
      // Refused before anything was written: nothing to retry.
      delete post.pending;
    } else {
      // Unknown: it may exist. The same key is sent again until an answer settles it.
      post.allowed.add(title);
      post.pending = "create";
    }
  }

  async function patch(post: Post): Promise<void> {
    post.version += 1;
    const title = `${post.key} v${post.version}`;
    const { response } = await send("patch", post, "PATCH", `/api/v1/posts/${post.id}`, { title });
    if (response?.status === 200) post.allowed = new Set([title]);
    else if (response === undefined || response.status >= 500) post.allowed.add(title);
  }

  async function remove(post: Post): Promise<void> {
    const { response } = await send("delete", post, "DELETE", `/api/v1/posts/${post.id}`);
    if (response?.status === 204 || (post.pending === "delete" && response?.status === 404)) {
      post.allowed = new Set([null]);
      post.deleted = true;
      delete post.pending;
    } else if (response === undefined || response.status >= 500) {
      post.allowed.add(null);
      post.pending = "delete";
    }
  }

  async function read(post: Post): Promise<void> {
    const { response, text, operation } = await send("read", post, "GET", `/api/v1/posts/${post.id}`);
    if (response?.status === 200) operation.title = (JSON.parse(text) as { title: string }).title;
    operation.allowed = [...post.allowed];
  }
}

/** One event of the change feed, as a JSON page lists it. */
export interface FeedEvent {
  readonly id: string;
  readonly type: "post.created" | "post.updated" | "post.deleted";
  readonly subject: string;
  readonly data: { readonly id: number; readonly title?: string };
}

/** Every event of the feed, page after page through `url`. */
export async function readFeed(url: string): Promise<FeedEvent[]> {
  const events: FeedEvent[] = [];
  let after = 0;
  for (;;) {
    const response = await fetch(`${url}/api/v1/posts/events?after=${after}&limit=1000`, {
      signal: AbortSignal.timeout(10_000),
    });
    if (response.status !== 200)
      throw new Error(`the feed answered ${response.status}: ${await response.text()}`);
    const page = (await response.json()) as { events: FeedEvent[]; next: number };
    events.push(...page.events);
    if (page.events.length === 0) return events;
    after = page.next;
  }
}

/** A post of the final database, by its idempotency key (its content `key:<key>`). */
export interface StoredPost {
  readonly id: string;
  readonly key: string;
  readonly title: string;
}

/** The figures of one history and what is wrong with it (nothing, when `violations` is empty). */
export interface Verdict {
  readonly violations: string[];
  readonly counts: Record<string, number>;
  /** From the fault to the first acknowledged write sent after it, in ms (undefined: none). */
  readonly writesBackMs: number | undefined;
  /** The longest a request waited for its answer, in ms. */
  readonly slowestMs: number;
}

/**
 * Checks a history against the final database and the change feed:
 * - every acknowledged write is there with its acknowledged content, or with the content of a
 *   write attempted after it whose outcome is unknown; no two posts per idempotency key;
 * - every read showed an allowed state (never older than acknowledged);
 * - no answer is a 5xx other than 503, each 503 carries Retry-After, every request is answered;
 * - the first write acknowledged after the fault came within `writesBackWithinMs`;
 * - the feed numbers its events 1…n with no gap or repeat, holds one post.created per
 *   acknowledged create, one post.updated per acknowledged patch, one post.deleted per
 *   acknowledged delete, and none for a write refused.
 */
export function checkHistory(input: {
  readonly history: readonly Operation[];
  readonly stored: readonly StoredPost[];
  readonly feed: readonly FeedEvent[];
  readonly faultAt: number;
  readonly writesBackWithinMs: number;
}): Verdict {
  const violations: string[] = [];
  const counts: Record<string, number> = {};
  let slowestMs = 0;
  for (const operation of input.history) {
    const label = `${operation.kind} ${operation.status === 0 ? "no answer" : operation.status}`;
    counts[label] = (counts[label] ?? 0) + 1;
    slowestMs = Math.max(slowestMs, operation.completedAt - operation.invokedAt);
    if (operation.status === 0) {
      violations.push(`${operation.kind} of ${operation.key} got no answer: ${operation.error}`);
    } else if (operation.status >= 500 && operation.status !== 503) {
      violations.push(
        `${operation.kind} of ${operation.key} answered ${operation.status}: ${operation.error}`,
      );
    } else if (operation.status === 503 && operation.retryAfter == null) {
      violations.push(`${operation.kind} of ${operation.key} answered 503 without Retry-After`);
    }
    if (operation.kind === "read") {
      const allowed = operation.allowed ?? [];
      const seen =
        operation.status === 200 ? (operation.title ?? "") : operation.status === 404 ? null : undefined;
      if (seen !== undefined && !allowed.includes(seen)) {
        violations.push(
          `read of ${operation.key} showed ${JSON.stringify(seen)}, allowed ${JSON.stringify(allowed)}`,
        );
      }
    }
  }

  const writesAfter = input.history
    .filter(
      (op) => op.kind !== "read" && op.invokedAt >= input.faultAt && op.status >= 200 && op.status < 300,
    )
    .map((op) => op.completedAt);
  const writesBackMs = writesAfter.length === 0 ? undefined : Math.min(...writesAfter) - input.faultAt;
  if (writesBackMs === undefined) violations.push("no write was acknowledged after the fault");
  else if (writesBackMs > input.writesBackWithinMs) {
    violations.push(
      `writes came back ${Math.round(writesBackMs)} ms after the fault (> ${input.writesBackWithinMs})`,
    );
  }

  // The final database against each post's history.
  const byKey = new Map<string, StoredPost[]>();
  for (const post of input.stored) byKey.set(post.key, [...(byKey.get(post.key) ?? []), post]);
  for (const [key, posts] of byKey) {
    if (posts.length > 1) violations.push(`${posts.length} posts for idempotency key ${key}`);
  }
  const keys = new Set(input.history.map((op) => op.key));
  for (const key of keys) {
    const allowed = finalAllowed(input.history.filter((op) => op.key === key));
    const stored = byKey.get(key)?.[0];
    const found = stored === undefined ? null : stored.title;
    if (!allowed.has(found)) {
      violations.push(
        `post ${key} ends as ${JSON.stringify(found)}, allowed ${JSON.stringify([...allowed])}`,
      );
    }
    const acknowledged = input.history.find(
      (op) => op.key === key && op.kind === "create" && op.status === 201,
    );
    if (acknowledged?.id !== undefined && stored !== undefined && stored.id !== acknowledged.id) {
      violations.push(`post ${key} was acknowledged as ${acknowledged.id} and is stored as ${stored.id}`);
    }
  }

  // The feed: numbered 1…n, and one event per acknowledged change.
  input.feed.forEach((event, index) => {
    if (event.id !== String(index + 1)) {
      violations.push(`the feed's event #${index + 1} has id ${event.id} (a gap or a repeat)`);
    }
  });
  const keyOfId = new Map<string, string>();
  for (const op of input.history) if (op.id !== undefined) keyOfId.set(op.id, op.key);
  const eventsOf = new Map<string, FeedEvent[]>();
  for (const event of input.feed) {
    const key = keyOfId.get(event.subject);
    if (key !== undefined) eventsOf.set(key, [...(eventsOf.get(key) ?? []), event]);
  }
  for (const key of keys) {
    const ops = input.history.filter((op) => op.key === key);
    const events = eventsOf.get(key) ?? [];
    const ofType = (type: FeedEvent["type"]) => events.filter((event) => event.type === type);
    const created = ofType("post.created").length;
    if (ops.some((op) => op.kind === "create" && op.status === 201) && created !== 1) {
      violations.push(`post ${key}: ${created} post.created events for an acknowledged create`);
    }
    if (created > 1) violations.push(`post ${key}: ${created} post.created events`);
    const updatedTitles = ofType("post.updated").map((event) => event.data.title);
    for (const op of ops.filter((op) => op.kind === "patch" && op.status === 200)) {
      const times = updatedTitles.filter((title) => title === op.title).length;
      if (times !== 1)
        violations.push(`post ${key}: ${times} post.updated events for the acknowledged "${op.title}"`);
    }
    const attempted = new Set(
      ops
        .filter((op) => op.kind === "patch" && (op.status === 0 || op.status >= 500 || op.status === 200))
        .map((op) => op.title),
    );
    for (const title of updatedTitles) {
      if (!attempted.has(title))
        violations.push(`post ${key}: a post.updated event for "${title}", never acknowledged nor in doubt`);
    }
    const versions = updatedTitles.map((title) => Number(/ v(\d+)$/.exec(title ?? "")?.[1]));
    if (versions.some((version, index) => index > 0 && version <= (versions[index - 1] as number))) {
      violations.push(`post ${key}: post.updated events out of order (${versions.join(", ")})`);
    }
    const deleted = ofType("post.deleted").length;
    if (ops.some((op) => op.kind === "delete" && op.status === 204) && deleted !== 1) {
      violations.push(`post ${key}: ${deleted} post.deleted events for an acknowledged delete`);
    }
    if (deleted > 1) violations.push(`post ${key}: ${deleted} post.deleted events`);
  }
  return { violations, counts, writesBackMs, slowestMs };
}

/** What a post may finally be, from its operations in the order they were sent. */
function finalAllowed(ops: readonly Operation[]): Allowed {
  let allowed: Allowed = new Set([null]);
  for (const op of ops) {
    const unknown = op.status === 0 || op.status >= 500;
    if (op.kind === "create") {
      if (op.status === 201) allowed = new Set([op.title ?? ""]);
      else if (unknown) allowed.add(op.title ?? "");
    } else if (op.kind === "patch") {
      if (op.status === 200) allowed = new Set([op.title ?? ""]);
      else if (unknown) allowed.add(op.title ?? "");
    } else if (op.kind === "delete") {
      if (op.status === 204) allowed = new Set([null]);
      else if (unknown) allowed.add(null);
    }
  }
  return allowed;
}

/**
 * What is wrong with the events a stream consumer applied (`applied`, their ids in the order it
 * applied them, redeliveries already recognised) against the feed: every event of the feed,
 * once each, in the feed's order, and nothing else. Empty when it holds.
 */
export function checkConsumer(feed: readonly FeedEvent[], applied: readonly string[]): string[] {
  const violations: string[] = [];
  const seen = new Map<string, number>();
  for (const id of applied) seen.set(id, (seen.get(id) ?? 0) + 1);
  for (const [id, times] of seen) if (times > 1) violations.push(`event ${id} applied ${times} times`);
  const inFeed = new Set(feed.map((event) => event.id));
  const missing = feed.filter((event) => !seen.has(event.id)).map((event) => event.id);
  if (missing.length > 0)
    violations.push(
      `${missing.length} events of the feed never applied (first ${missing.slice(0, 5).join(", ")})`,
    );
  const foreign = [...seen.keys()].filter((id) => !inFeed.has(id));
  if (foreign.length > 0)
    violations.push(`events applied that the feed lacks: ${foreign.slice(0, 5).join(", ")}`);
  const order = new Map(feed.map((event, index) => [event.id, index]));
  const positions = [...new Set(applied)].map((id) => order.get(id)).filter((at) => at !== undefined);
  const back = positions.findIndex((at, index) => index > 0 && at < (positions[index - 1] as number));
  if (back > 0)
    violations.push(
      `applied out of the feed's order: the event applied #${back + 1} comes before the one applied before it`,
    );
  return violations;
}
