import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { type ClientOptions, createClient, type PostsClient } from "@posts/client";
import { expect, vi } from "vitest";
import type { TcpProxy } from "../reliability/tcp-proxy.js";

const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

/** One request the client sent, and the status it got (undefined: no answer). */
export interface Sent {
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
  status: number | undefined;
  retryAfter: string | null;
  readonly at: number;
}

/** The global fetch, recording what passes through it: the tests look at the client's retries. */
export function recordingFetch(): { fetch: typeof fetch; sent: Sent[] } {
  const sent: Sent[] = [];
  const recording = async (input: string | URL | Request, init: RequestInit = {}) => {
    const entry: Sent = {
      method: init.method ?? "GET",
      url: String(input),
      headers: new Headers(init.headers),
      status: undefined,
      retryAfter: null,
      at: performance.now(),
    };
    sent.push(entry);
    const response = await fetch(input, init);
    entry.status = response.status;
    entry.retryAfter = response.headers.get("retry-after");
    return response;
  };
  return { fetch: recording as typeof fetch, sent };
}

/** A client of `baseUrl` recording its requests, with short waits so the tests stay quick. */
export function clientOf(baseUrl: string, options: Partial<ClientOptions> = {}) {
  const { fetch, sent } = recordingFetch();
  const client = createClient({
    baseUrl,
    fetch,
    retry: { baseDelayMs: 50, maxDelayMs: 500, maxElapsedMs: 20_000, maxAttempts: 6 },
    ...options,
  });
  return { client, sent };
}

/** A fresh account, logged in: the anonymous client and the authenticated one. */
export async function signedUp(baseUrl: string, options: Partial<ClientOptions> = {}) {
  const { client, sent } = clientOf(baseUrl, options);
  const credentials = { email: `client-${crypto.randomUUID()}@example.com`, password: "a long password" };
  const user = await client.users.register(credentials);
  if (!user.ok) expect.fail(JSON.stringify(user.error));
  const login = await client.users.login(credentials);
  if (!login.ok) expect.fail(JSON.stringify(login.error));
  return {
    anonymous: client,
    client: client.withToken(login.value.token),
    user: user.value,
    credentials,
    sent,
  };
}

/** The value of a result that must be a success (its failure in the message otherwise). */
export function succeeded<T>(result: { ok: true; value: T } | { ok: false; error: unknown }): T {
  if (!result.ok) expect.fail(`expected a success, got ${JSON.stringify(result.error)}`);
  return result.value;
}

/** Every post of `userId`, through the client's iterator. */
export async function postsOf(client: PostsClient, userId: number) {
  const posts = [];
  const listing = client.posts.list({ userId, size: 100 });
  for await (const post of listing) posts.push(post);
  expect(listing.error).toBeUndefined();
  return posts;
}

/**
 * The whole flow through the client: register, log in, create, read, update with the version
 * read, list over several pages, search, delete, delete the account.
 */
export async function walkTheFlow(baseUrl: string): Promise<void> {
  const { client, anonymous, user } = await signedUp(baseUrl);
  const marker = crypto.randomUUID().slice(0, 8);
  const ids: number[] = [];
  for (let index = 0; index < 5; index++) {
    const created = succeeded(await client.posts.create({ title: `${marker} #${index}`, content: "body" }));
    expect(created.replayed).toBe(false);
    ids.push(created.id);
  }
  const read = succeeded(await anonymous.posts.get(ids[0] ?? 0));
  expect(read.value).toMatchObject({
    id: ids[0],
    title: `${marker} #0`,
    user: { id: user.id, email: user.email },
  });

  const updated = succeeded(await client.posts.update(read, { title: `${marker} changed` }));
  expect(updated.value).toMatchObject({ id: ids[0], title: `${marker} changed`, content: "body" });
  expect(updated.version).not.toBe(read.version);

  // Pages of two: three pages, newest first, every post once.
  const listing = anonymous.posts.list({ userId: user.id, size: 2 });
  const pages = [];
  for await (const page of listing.pages()) pages.push(page.content.map((post) => post.id));
  expect(pages).toEqual([ids.slice(3).reverse(), ids.slice(1, 3).reverse(), ids.slice(0, 1)]);
  const found = [];
  for await (const post of anonymous.posts.list({ q: marker.toUpperCase(), size: 2 })) found.push(post.id);
  expect(found).toEqual([...ids].reverse());

  expect(succeeded(await client.posts.delete(updated))).toEqual({ confirmed: true });
  expect(await anonymous.posts.get(ids[0] ?? 0)).toMatchObject({
    ok: false,
    error: { kind: "not-found", status: 404 },
  });
  expect(succeeded(await client.users.me())).toEqual(user);
  expect(await anonymous.posts.create({ title: "t", content: "c" })).toMatchObject({
    ok: false,
    error: { kind: "forbidden", status: 403 },
  });
  expect(await client.posts.create({ title: " ", content: "c" })).toMatchObject({
    ok: false,
    error: { kind: "validation", errors: [{ field: "title" }] },
  });
  expect(succeeded(await client.users.deleteMe())).toEqual({ confirmed: true });
  expect(await client.users.me()).toMatchObject({ ok: false, error: { kind: "unauthorized" } });
}

/** An update based on a version someone else has changed since: a typed 412, and nothing changed. */
export async function refuseAStaleUpdate(baseUrl: string): Promise<void> {
  const { client } = await signedUp(baseUrl);
  const { id } = succeeded(await client.posts.create({ title: "first", content: "body" }));
  const mine = succeeded(await client.posts.get(id));
  const theirs = succeeded(await client.posts.get(id));
  succeeded(await client.posts.update(theirs, { content: "their change" }));
  expect(await client.posts.update(mine, { title: "my change" })).toMatchObject({
    ok: false,
    error: { kind: "precondition-failed", status: 412, maybeApplied: false },
  });
  expect(await client.posts.delete(mine)).toMatchObject({
    ok: false,
    error: { kind: "precondition-failed" },
  });
  expect(succeeded(await client.posts.get(id)).value).toMatchObject({
    title: "first",
    content: "their change",
  });
}

/**
 * A create and a delete whose answers the proxy in front of the service loses: the create is
 * retried with the same key and makes exactly one post; the delete's retry finds it gone.
 */
export async function surviveLostAnswers(proxy: TcpProxy, proxiedUrl: string): Promise<void> {
  const { client, user, sent } = await signedUp(proxiedUrl);
  sent.length = 0;
  const lost = proxy.loseNextAnswer();
  const created = succeeded(await client.posts.create({ title: "once", content: "only once" }));
  await lost;
  expect(created.replayed).toBe(true);
  expect(sent.map((request) => request.status)).toEqual([undefined, 201]);
  const keys = sent.map((request) => request.headers.get("idempotency-key"));
  expect(keys[0]).toBe(created.idempotencyKey);
  expect(keys[1]).toBe(created.idempotencyKey);
  expect((await postsOf(client, user.id)).map((post) => post.id)).toEqual([created.id]);

  sent.length = 0;
  const read = succeeded(await client.posts.get(created.id));
  const lostAgain = proxy.loseNextAnswer();
  expect(succeeded(await client.posts.delete(read))).toEqual({ confirmed: false });
  await lostAgain;
  expect(sent.map((request) => `${request.method} ${request.status}`)).toEqual([
    "GET 200",
    "DELETE undefined",
    // The retry's conditional delete finds the post gone (412); the client reads it to tell.
    "DELETE 412",
    "GET 404",
  ]);
  expect(await postsOf(client, user.id)).toEqual([]);
}

/** Logins refused with 429 and Retry-After: the client waits at least that long, then logs in. */
export async function honourRetryAfter(baseUrl: string): Promise<void> {
  const { anonymous, credentials, sent } = await signedUp(baseUrl);
  // The throttle counts failures per email: this service allows LOGIN_THROTTLE_MAX=2 of them.
  for (let index = 0; index < 2; index++) {
    expect(await anonymous.users.login({ ...credentials, password: "wrong password" })).toMatchObject({
      ok: false,
      error: { kind: "unauthorized" },
    });
  }
  sent.length = 0;
  const login = await anonymous.users.login(credentials);
  expect(succeeded(login).token).toEqual(expect.any(String));
  const refused = sent.filter((request) => request.status === 429);
  expect(refused.length).toBeGreaterThanOrEqual(1);
  expect(sent.at(-1)?.status).toBe(200);
  // Every retry came no sooner than the Retry-After (whole seconds) of the 429 before it.
  for (let index = 1; index < sent.length; index++) {
    const before = sent[index - 1];
    expect(before?.retryAfter).toMatch(/^[1-9]\d*$/);
    const waited = (sent[index]?.at ?? 0) - (before?.at ?? 0);
    expect(waited).toBeGreaterThanOrEqual(Number(before?.retryAfter) * 1000);
  }
}

/** Runs the generator in check mode: exit code and output. */
export function checkGeneratedTypes(from: string, file?: string) {
  return new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "scripts/generate-types.ts",
        "--check",
        "--from",
        from,
        ...(file ? ["--file", file] : []),
      ],
      { cwd: `${ROOT}packages/client`, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("close", (code) => resolve({ code, output }));
  });
}

/** The committed generated types with one line changed, written to `path`. */
export async function alteredTypes(path: string): Promise<void> {
  const committed = await readFile(`${ROOT}packages/client/src/generated/openapi.ts`, "utf8");
  await writeFile(path, committed.replace("title: string", "title: number"));
}

/**
 * Follows the change feed through the proxy, which cuts the stream after the first event of a
 * new post: the feed resumes with Last-Event-ID and sees the post's three events, every event
 * number once and in order.
 */
export async function followTheFeedThroughACut(proxy: TcpProxy, proxiedUrl: string, url: string) {
  const { client } = await signedUp(url);
  const { id } = succeeded(await client.posts.create({ title: "followed", content: "c" }));
  const { client: follower, sent } = clientOf(proxiedUrl);
  const controller = new AbortController();
  const feed = follower.events.follow({ after: 0, signal: controller.signal });
  const numbers: number[] = [];
  const ofThePost: string[] = [];
  const following = (async () => {
    for await (const event of feed) {
      numbers.push(Number(event.id));
      if (event.subject === String(id)) ofThePost.push(event.type);
      if (ofThePost.length === 3) controller.abort();
    }
  })();
  const until = (done: () => boolean) =>
    vi.waitFor(
      () =>
        expect(done(), `events seen: ${numbers.join(", ")}; of the post: ${ofThePost.join(", ")}`).toBe(true),
      { timeout: 20_000, interval: 20 },
    );
  await until(() => ofThePost.length === 1);
  proxy.cut();
  const read = succeeded(await client.posts.get(id));
  succeeded(await client.posts.update(read, { title: "followed, edited" }));
  succeeded(await client.posts.delete(id));
  await until(() => ofThePost.length === 3);
  await following;
  expect(feed.error).toBeUndefined();
  expect(ofThePost).toEqual(["post.created", "post.updated", "post.deleted"]);
  // Gap-free, each once: 1, 2, 3, …
  expect(numbers).toEqual(numbers.map((_, index) => index + 1));
  const connections = sent.filter((request) => request.url.includes("/api/v1/posts/events"));
  expect(connections.length).toBeGreaterThanOrEqual(2);
  expect(Number(connections[1]?.headers.get("last-event-id"))).toBeGreaterThanOrEqual(1);
}
