import { describe, expect, it } from "vitest";
import { backoffDelay, createClient, DEFAULT_RETRY, parseRetryAfter } from "../src/index.js";

type Reply = Response | Error | ((init: RequestInit) => Promise<Response>);

/** A fetch that answers `replies` in order and records every request it was given. */
function fakeFetch(...replies: Reply[]) {
  const requests: Array<{ method: string; url: string; headers: Headers; at: number }> = [];
  const fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    requests.push({
      method: init.method ?? "GET",
      url: String(input),
      headers: new Headers(init.headers),
      at: performance.now(),
    });
    const reply = replies.shift();
    if (reply === undefined) throw new Error("no more replies");
    if (reply instanceof Error) throw reply;
    return typeof reply === "function" ? reply(init) : reply;
  };
  return { fetch: fetch as typeof globalThis.fetch, requests };
}

const lost = () =>
  new TypeError("fetch failed", {
    cause: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }),
  });
const refused = () =>
  new TypeError("fetch failed", {
    cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }),
  });
const status = (code: number, headers: Record<string, string> = {}, body = "") =>
  new Response(code === 204 ? null : body, { status: code, headers });
const json = (code: number, body: unknown, headers: Record<string, string> = {}) =>
  status(code, { "content-type": "application/json; charset=utf-8", ...headers }, JSON.stringify(body));
const created = (id: number, replayed = false) =>
  status(201, {
    location: `http://x/api/v1/posts/${id}`,
    ...(replayed ? { "idempotent-replayed": "true" } : {}),
  });
const POST = {
  id: 7,
  title: "t",
  content: "c",
  createdAt: "",
  updatedAt: "",
  user: { id: 1, email: "a@b.c" },
};

const fast = { baseDelayMs: 1, maxDelayMs: 5 };
const clientOver = (fetch: typeof globalThis.fetch, retry = {}) =>
  createClient({ baseUrl: "http://x", token: "t", fetch, retry: { ...fast, ...retry } });

describe("backoff", () => {
  it("draws in [0, min(max, base·2^(n−1))], never below Retry-After", () => {
    const policy = { ...DEFAULT_RETRY, baseDelayMs: 100, maxDelayMs: 1_000 };
    expect(backoffDelay(1, policy, undefined, () => 0.999)).toBe(99);
    expect(backoffDelay(3, policy, undefined, () => 0.5)).toBe(200);
    expect(backoffDelay(10, policy, undefined, () => 0.999)).toBe(999);
    expect(backoffDelay(1, policy, undefined, () => 0)).toBe(0);
    expect(backoffDelay(1, policy, 2_000, () => 0.999)).toBe(2_000);
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    expect(parseRetryAfter("3")).toBe(3_000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfter(new Date(0).toUTCString(), 4_000)).toBe(0);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter("soon")).toBeUndefined();
  });
});

describe("retries", () => {
  it("retries a create whose answer was lost with the same Idempotency-Key, and reports the replay", async () => {
    const { fetch, requests } = fakeFetch(lost(), created(7, true));
    const result = await clientOver(fetch).posts.create({ title: "t", content: "c" });
    expect(result).toEqual({
      ok: true,
      value: {
        id: 7,
        location: "http://x/api/v1/posts/7",
        replayed: true,
        idempotencyKey: expect.any(String),
      },
    });
    const keys = requests.map((request) => request.headers.get("idempotency-key"));
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
  });

  it("uses the caller's Idempotency-Key when given", async () => {
    const { fetch, requests } = fakeFetch(created(3));
    await clientOver(fetch).posts.create({ title: "t", content: "c" }, { idempotencyKey: "mine-1" });
    expect(requests[0]?.headers.get("idempotency-key")).toBe("mine-1");
  });

  it("never retries a registration (no key) after a lost answer, and says it may have happened", async () => {
    const { fetch, requests } = fakeFetch(lost(), json(201, { id: 1 }));
    const result = await clientOver(fetch).users.register({ email: "a@b.c", password: "password1" });
    expect(requests).toHaveLength(1);
    expect(result).toMatchObject({ ok: false, error: { kind: "network", maybeApplied: true } });
  });

  it("nor after a 503: without a key, a request is sent once", async () => {
    const { fetch, requests } = fakeFetch(json(503, { message: "down" }, { "retry-after": "0" }));
    const result = await clientOver(fetch).users.register({ email: "a@b.c", password: "password1" });
    expect(requests).toHaveLength(1);
    expect(result).toMatchObject({ ok: false, error: { kind: "unavailable", status: 503, retryAfterMs: 0 } });
  });

  it("retries 503 and 429 on reads until an answer, waiting at least Retry-After", async () => {
    const { fetch, requests } = fakeFetch(
      json(503, {}, { "retry-after": "1" }),
      json(429, {}, { "retry-after": "0" }),
      json(200, POST, { etag: '"v1"' }),
    );
    const result = await clientOver(fetch).posts.get(7);
    expect(result).toEqual({ ok: true, value: { value: POST, version: '"v1"' } });
    expect(requests).toHaveLength(3);
    const [first, second] = requests;
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(990);
  });

  it("stops after maxAttempts with the last answer as a typed failure", async () => {
    const { fetch, requests } = fakeFetch(...[1, 2, 3].map(() => json(503, { message: "down" })));
    const result = await clientOver(fetch, { maxAttempts: 3 }).posts.get(7);
    expect(requests).toHaveLength(3);
    expect(result).toMatchObject({
      ok: false,
      error: { kind: "unavailable", message: "down", retryAfterMs: undefined },
    });
  });

  it("does not wait past its time budget for a long Retry-After", async () => {
    const { fetch, requests } = fakeFetch(json(429, {}, { "retry-after": "60" }), json(200, POST));
    const started = performance.now();
    const result = await clientOver(fetch, { maxElapsedMs: 1_000 }).posts.get(7);
    expect(performance.now() - started).toBeLessThan(500);
    expect(requests).toHaveLength(1);
    expect(result).toMatchObject({ ok: false, error: { kind: "too-many-requests", retryAfterMs: 60_000 } });
  });

  it("retries a PATCH only because it carries If-Match, and reports a 412 after a lost answer as maybe applied", async () => {
    const { fetch, requests } = fakeFetch(lost(), json(412, { error: "Precondition Failed" }));
    const result = await clientOver(fetch).posts.update(
      { value: { id: 7 }, version: '"v1"' },
      { title: "n" },
    );
    expect(requests.map((request) => request.headers.get("if-match"))).toEqual(['"v1"', '"v1"']);
    expect(result).toMatchObject({ ok: false, error: { kind: "precondition-failed", maybeApplied: true } });
  });

  it("reports a retried DELETE that finds no post as deleted, unconfirmed; a first 404 as not found", async () => {
    const retried = fakeFetch(lost(), status(404, { "content-type": "text/plain; charset=utf-8" }, "none"));
    expect(await clientOver(retried.fetch).posts.delete(7)).toEqual({
      ok: true,
      value: { confirmed: false },
    });
    const plain = fakeFetch(status(404, { "content-type": "text/plain; charset=utf-8" }, "none"));
    expect(await clientOver(plain.fetch).posts.delete(7)).toMatchObject({
      ok: false,
      error: { kind: "not-found" },
    });
    const refusedFirst = fakeFetch(refused(), status(404, {}, "none"));
    expect(await clientOver(refusedFirst.fetch).posts.delete(7)).toMatchObject({
      ok: false,
      error: { kind: "not-found", maybeApplied: false },
    });
  });

  it("tells a conditional DELETE's 412 after a lost answer apart by reading the post: gone, or changed by another", async () => {
    const gone = fakeFetch(lost(), json(412, {}), status(404, {}, "none"));
    const read = { value: { id: 7 }, version: '"v1"' };
    expect(await clientOver(gone.fetch).posts.delete(read)).toEqual({
      ok: true,
      value: { confirmed: false },
    });
    expect(gone.requests.map((request) => request.method)).toEqual(["DELETE", "DELETE", "GET"]);
    const changed = fakeFetch(lost(), json(412, {}), json(200, POST, { etag: '"v2"' }));
    expect(await clientOver(changed.fetch).posts.delete(read)).toMatchObject({
      ok: false,
      error: { kind: "precondition-failed", maybeApplied: false },
    });
  });

  it("gives up a network failure after the attempts allowed", async () => {
    const { fetch, requests } = fakeFetch(lost(), lost(), lost());
    const result = await clientOver(fetch, { maxAttempts: 3 }).posts.page();
    expect(requests).toHaveLength(3);
    expect(result).toMatchObject({ ok: false, error: { kind: "network", maybeApplied: true } });
  });
});

describe("timeouts and aborts", () => {
  const hang = (init: RequestInit) =>
    new Promise<Response>((_, reject) =>
      init.signal?.addEventListener("abort", () => reject(init.signal?.reason), { once: true }),
    );

  it("an attempt with no answer in time is a timeout, retried when idempotent", async () => {
    const { fetch, requests } = fakeFetch(hang, json(200, { content: [], size: 20, nextCursor: null }));
    const result = await clientOver(fetch).posts.page({}, { timeoutMs: 50 });
    expect(requests).toHaveLength(2);
    expect(result).toMatchObject({ ok: true, value: { content: [] } });
    const once = fakeFetch(hang);
    const refusedResult = await clientOver(once.fetch).users.register(
      { email: "a@b.c", password: "password1" },
      { timeoutMs: 50 },
    );
    expect(refusedResult).toMatchObject({ ok: false, error: { kind: "timeout", maybeApplied: true } });
  });

  it("the caller's signal ends the call, its retries and its waits at once", async () => {
    const controller = new AbortController();
    const { fetch, requests } = fakeFetch(json(503, {}, { "retry-after": "30" }), json(200, POST));
    setTimeout(() => controller.abort(), 50);
    const started = performance.now();
    const result = await clientOver(fetch, { maxElapsedMs: 60_000 }).posts.get(7, {
      signal: controller.signal,
    });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(requests).toHaveLength(1);
    expect(result).toMatchObject({ ok: false, error: { kind: "aborted" } });
  });
});

describe("error mapping", () => {
  const cases: Array<[Response, string, Record<string, unknown>?]> = [
    [
      json(400, { message: "bad", errors: [{ field: "title", message: "m" }] }),
      "validation",
      { errors: [{ field: "title", message: "m" }] },
    ],
    [status(400), "validation", { errors: [] }],
    [json(401, { error: "invalid token" }), "unauthorized", { message: "invalid token" }],
    [
      status(401, { "content-type": "text/plain; charset=utf-8" }, "작성자만"),
      "not-author",
      { message: "작성자만" },
    ],
    [json(403, { error: "Forbidden" }), "forbidden"],
    [status(404, { "content-type": "text/plain; charset=utf-8" }, "없음"), "not-found"],
    [json(409, { error: "Conflict" }), "conflict"],
    [json(412, { error: "Precondition Failed" }), "precondition-failed"],
    [json(422, { error: "Unprocessable Entity" }), "idempotency-key-reused"],
    [json(500, { error: "Internal Server Error" }), "unexpected-status", { status: 500 }],
    [json(415, { error: "Unsupported Media Type" }), "unexpected-status", { status: 415 }],
  ];
  it.each(cases)("%#: an answer maps to its kind (%s)", async (response, kind, extra = {}) => {
    const { fetch } = fakeFetch(response);
    const result = await clientOver(fetch).posts.update({ value: { id: 7 }, version: '"v"' }, { title: "x" });
    expect(result).toMatchObject({ ok: false, error: { kind, maybeApplied: false, ...extra } });
  });

  it("a 201 without a post's Location is an invalid response, not a success", async () => {
    const { fetch } = fakeFetch(status(201));
    expect(await clientOver(fetch).posts.create({ title: "t", content: "c" })).toMatchObject({
      ok: false,
      error: { kind: "invalid-response" },
    });
  });
});

describe("listing", () => {
  it("follows nextCursor through short and empty pages, and keeps the query", async () => {
    const page = (ids: number[], nextCursor: string | null) =>
      json(200, { content: ids.map((id) => ({ ...POST, id })), size: 2, nextCursor });
    const { fetch, requests } = fakeFetch(page([9, 8], "a"), page([], "b"), page([5], "c"), page([3], null));
    const ids: number[] = [];
    const listing = clientOver(fetch).posts.list({ q: "x y", size: 2 });
    for await (const post of listing) ids.push(post.id);
    expect(ids).toEqual([9, 8, 5, 3]);
    expect(listing.error).toBeUndefined();
    expect(requests.map((request) => new URL(request.url).search)).toEqual([
      "?q=x+y&size=2",
      "?q=x+y&size=2&cursor=a",
      "?q=x+y&size=2&cursor=b",
      "?q=x+y&size=2&cursor=c",
    ]);
  });

  it("stops at a failed page and says why in error", async () => {
    const { fetch } = fakeFetch(
      json(200, { content: [POST], size: 1, nextCursor: "a" }),
      json(400, { message: "invalid cursor" }),
    );
    const listing = clientOver(fetch).posts.list({ size: 1 });
    const seen: number[] = [];
    for await (const post of listing) seen.push(post.id);
    expect(seen).toEqual([7]);
    expect(listing.error).toMatchObject({ kind: "validation", message: "invalid cursor" });
  });
});
