// A program written against the client that openapi-typescript generates from the served
// document (./generated/posts-api.ts, made by generated-client.test.ts, which also type-checks
// this file with tsconfig.client.json, strict). It runs the whole API through openapi-fetch.
import { strict as assert } from "node:assert";
import { randomUUID } from "node:crypto";
import createClient, { type Middleware } from "openapi-fetch";
import { expect } from "vitest";
import type { components, paths } from "./generated/posts-api.js";

type Post = components["schemas"]["Post"];
type PostPage = components["schemas"]["PostPage"];
type ErrorEnvelope = components["schemas"]["ErrorEnvelope"];
type ChangeEvent = components["schemas"]["ChangeEvent"];

/**
 * Register, log in, create (with an Idempotency-Key, then its replay), read with ETag and a 304,
 * update with If-Match and a 412, the empty 400, list with cursor and q (and a 304), delete,
 * read those changes in the change feed (and its 400), delete the account, through a client
 * typed by the document. `middleware` sees every response.
 */
export async function runClientFlow(baseUrl: string, middleware: Middleware): Promise<void> {
  const client = createClient<paths>({ baseUrl });
  client.use(middleware);

  for (const path of ["/health", "/ready"] as const) {
    const { data } = await client.GET(path);
    assert.equal(data?.status, "ok");
  }
  const metrics = await client.GET("/metrics", { parseAs: "text" });
  assert.match(metrics.data ?? "", /^# HELP /m);

  const credentials = { email: `flow-${randomUUID()}@example.com`, password: "password123" };
  const registered = await client.POST("/api/v1/user", { body: credentials });
  assert.equal(registered.response.status, 201);
  assert.equal(registered.data?.email, credentials.email);
  assert.match(registered.response.headers.get("location") ?? "", /\/api\/v1\/user$/);

  const loggedIn = await client.POST("/api/v1/user/login", { body: credentials });
  const token = loggedIn.data?.token;
  assert.ok(token !== undefined, "logged in");
  const auth = { "X-AUTH-TOKEN": token };

  const me = await client.GET("/api/v1/user", { headers: auth });
  assert.equal(me.data?.id, registered.data?.id);

  // Create with an Idempotency-Key; the retry creates nothing and answers the same Location.
  const key = randomUUID();
  const newPost = { title: "Typed", content: "from a generated client" };
  const created = await client.POST("/api/v1/posts", {
    headers: auth,
    params: { header: { "Idempotency-Key": key } },
    body: newPost,
  });
  assert.equal(created.response.status, 201);
  const location = created.response.headers.get("location") ?? "";
  const replay = await client.POST("/api/v1/posts", {
    headers: auth,
    params: { header: { "Idempotency-Key": key } },
    body: newPost,
  });
  assert.equal(replay.response.headers.get("idempotent-replayed"), "true");
  assert.equal(replay.response.headers.get("location"), location);
  const id = Number(location.slice(location.lastIndexOf("/") + 1));

  // Ids are integers in the document: a string does not compile.
  // @ts-expect-error the path id is a number
  void (() => client.GET("/api/v1/posts/{id}", { params: { path: { id: "1" } } }));

  const read = await client.GET("/api/v1/posts/{id}", { params: { path: { id } } });
  const post: Post | undefined = read.data;
  assert.equal(post?.title, newPost.title);
  const etag = read.response.headers.get("etag") ?? "";
  const revalidated = await client.GET("/api/v1/posts/{id}", {
    params: { path: { id }, header: { "If-None-Match": etag } },
  });
  assert.equal(revalidated.response.status, 304);

  const updated = await client.PATCH("/api/v1/posts/{id}", {
    headers: auth,
    params: { path: { id }, header: { "If-Match": etag } },
    body: { title: "Typed, changed" },
  });
  assert.equal(updated.data?.title, "Typed, changed");
  const stale = await client.PATCH("/api/v1/posts/{id}", {
    headers: auth,
    params: { path: { id }, header: { "If-Match": etag } },
    body: { content: "lost update" },
  });
  assert.equal(stale.response.status, 412);
  // The error is every failure body the operation declares: its type narrows by shape.
  const conflict = stale.error;
  assert.ok(typeof conflict === "object" && "status" in conflict, "the envelope");
  const envelope: ErrorEnvelope = conflict;
  assert.equal(envelope.error, "Precondition Failed");

  // Neither field: 400 with an empty body. openapi-fetch answers `error: undefined` for any
  // failure without a body, so a client tests `response.ok`, never `error` alone.
  const nothing = await client.PATCH("/api/v1/posts/{id}", {
    headers: auth,
    params: { path: { id } },
    body: {},
  });
  assert.equal(nothing.response.status, 400);
  assert.equal(nothing.response.ok, false);
  assert.equal(nothing.data, undefined);
  assert.equal(nothing.error, undefined);
  const invalid = await client.PATCH("/api/v1/posts/{id}", {
    headers: auth,
    params: { path: { id } },
    body: { title: " " },
  });
  assert.ok(typeof invalid.error === "object" && "status" in invalid.error, "the envelope");
  assert.equal(invalid.error.errors?.[0]?.field, "title");

  // A search paged by cursor: three posts with a word of their own, two to a page.
  const word = `w${randomUUID().slice(0, 8)}`;
  for (const n of [1, 2, 3]) {
    await client.POST("/api/v1/posts", { headers: auth, body: { title: `${word} ${n}`, content: "paged" } });
  }
  const first = await client.GET("/api/v1/posts", { params: { query: { q: word, size: 2 } } });
  const page: PostPage | undefined = first.data;
  assert.deepEqual(
    page?.content.map((item) => item.title),
    [`${word} 3`, `${word} 2`],
  );
  assert.ok(page?.nextCursor != null, "a next page");
  assert.match(first.response.headers.get("link") ?? "", /rel="next"/);
  const second = await client.GET("/api/v1/posts", {
    params: { query: { q: word, size: 2, cursor: page.nextCursor } },
  });
  assert.deepEqual(
    second.data?.content.map((item) => item.title),
    [`${word} 1`],
  );
  assert.equal(second.data?.nextCursor, null);
  const unchanged = await client.GET("/api/v1/posts", {
    params: {
      query: { q: word, size: 2 },
      header: { "If-None-Match": first.response.headers.get("etag") ?? "" },
    },
  });
  assert.equal(unchanged.response.status, 304);

  const current = (await client.GET("/api/v1/posts/{id}", { params: { path: { id } } })).response.headers;
  const deleted = await client.DELETE("/api/v1/posts/{id}", {
    headers: auth,
    params: { path: { id }, header: { "If-Match": current.get("etag") ?? "" } },
  });
  assert.equal(deleted.response.status, 204);
  const gone = await client.GET("/api/v1/posts/{id}", { params: { path: { id } }, parseAs: "text" });
  assert.equal(gone.response.status, 404);

  // The change feed as JSON pages (its stream is not a request/response openapi-fetch models):
  // the flow's own changes, in order, each with its type and the post as it was then.
  await feedReaches(baseUrl, `"type":"post.deleted","subject":"${id}"`);
  const feed = await client.GET("/api/v1/posts/events", { params: { query: { after: 0, limit: 1000 } } });
  assert.equal(feed.response.headers.get("cache-control"), "no-cache");
  // The 200 declares two media types, the JSON page and the stream's text: a page is an object.
  assert.ok(typeof feed.data === "object", "a JSON page");
  const events: ChangeEvent[] = feed.data.events;
  assert.equal(feed.data.next, Number(events.at(-1)?.id));
  const ofPost = events.filter((event) => event.subject === String(id));
  assert.deepEqual(
    ofPost.map((event) => event.type),
    ["post.created", "post.updated", "post.deleted"],
  );
  const [createdEvent, updatedEvent, deletedEvent] = ofPost;
  assert.ok(createdEvent !== undefined && "title" in createdEvent.data, "the created post");
  assert.equal(createdEvent.data.title, newPost.title);
  assert.ok(updatedEvent !== undefined && "title" in updatedEvent.data, "the updated post");
  assert.equal(updatedEvent.data.title, "Typed, changed");
  assert.deepEqual(deletedEvent?.data, { id });
  assert.deepEqual(
    events
      .filter((event) => event.type === "post.created" && "title" in event.data)
      .map((event) => ("title" in event.data ? event.data.title : ""))
      .filter((title) => title.startsWith(word)),
    [`${word} 1`, `${word} 2`, `${word} 3`],
  );
  // `after` is typed a non-negative integer; a negative one still reaches the server, which refuses it.
  const badAfter = await client.GET("/api/v1/posts/events", { params: { query: { after: -1 } } });
  assert.equal(badAfter.response.status, 400);
  assert.ok(typeof badAfter.error === "object" && "status" in badAfter.error, "the envelope");
  assert.equal(badAfter.error.status, 400);

  const left = await client.DELETE("/api/v1/user", { headers: auth });
  assert.equal(left.response.status, 204);
  const orphan = await client.GET("/api/v1/user", { headers: auth });
  assert.equal(orphan.response.status, 401);
  assert.equal(typeof orphan.error?.error, "string");
}

/**
 * Waits until the feed's first page holds `text`. A change is in the feed within a second of its
 * response, not with it (on PostgreSQL, events are numbered after their commit), so the flow
 * waits for its last change before reading. Plain fetch: these polls are not the flow's calls.
 */
async function feedReaches(baseUrl: string, text: string): Promise<void> {
  await expect
    .poll(
      async () =>
        (await (await fetch(`${baseUrl}/api/v1/posts/events?after=0&limit=1000`)).text()).includes(text),
      { message: `the feed never showed ${text}`, timeout: 10_000, interval: 50 },
    )
    .toBe(true);
}
