import type { ApiClient } from "../http/api-client.js";
import type { ConformanceCase } from "../runner/conformance-case.js";
import { Mismatch } from "../runner/mismatch.js";
import {
  expectEnvelope,
  expectEqual,
  expectHeader,
  expectKeys,
  expectStatus,
  expectThat,
  JSON_UTF8,
  jsonOf,
  objectOf,
  show,
} from "../support/expectations.js";
import { POSTS, USER } from "../support/fixture.js";
import { expectPost, expectPostReply } from "../support/wire-shapes.js";

const section = "docs/change-events.md";
const EVENTS = "/api/v1/posts/events";
// The event's properties as docs/change-events.md#the-events lists them; the HTTP adapter's tests keep their
// own list, as this suite imports no code of the service (see PostJson).
const CLOUD_EVENT_KEYS = [
  "specversion",
  "id",
  "source",
  "type",
  "subject",
  "time",
  "datacontenttype",
  "data",
];
const RFC3339_UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** How soon an event must be in the feed after its change's response. */
const FEED_DELAY_MS = 1000;
/** The contract's longest silence on an idle stream, and the margin a test over a network needs. */
const KEEP_ALIVE_MS = 15_000;
const KEEP_ALIVE_MARGIN_MS = 2000;
const MIB = 1024 * 1024;

interface CloudEvent {
  readonly id: string;
  readonly type: string;
  readonly subject: string;
  readonly time: string;
  readonly data: Record<string, unknown>;
}

/** Fails unless `value` is a CloudEvent as docs/change-events.md#the-events describes it; answers it. */
function expectCloudEvent(value: unknown, what: string): CloudEvent {
  const event = objectOf(value, what);
  expectKeys(event, CLOUD_EVENT_KEYS, what);
  expectEqual(event.specversion, "1.0", `${what}.specversion`);
  expectThat(
    typeof event.id === "string" && /^[1-9][0-9]*$/.test(event.id),
    `${what}.id`,
    "a decimal string",
    event.id,
  );
  expectEqual(event.source, "/api/v1/posts", `${what}.source`);
  expectThat(
    ["post.created", "post.updated", "post.deleted"].includes(event.type as string),
    `${what}.type`,
    "post.created, post.updated or post.deleted",
    event.type,
  );
  expectThat(
    typeof event.subject === "string" && /^[0-9]+$/.test(event.subject),
    `${what}.subject`,
    "the post id as a string",
    event.subject,
  );
  expectThat(
    typeof event.time === "string" && RFC3339_UTC_MS.test(event.time),
    `${what}.time`,
    "UTC RFC 3339 with milliseconds",
    event.time,
  );
  expectEqual(event.datacontenttype, "application/json", `${what}.datacontenttype`);
  if (event.type === "post.deleted") {
    expectEqual(event.data, { id: Number(event.subject) }, `${what}.data`);
  } else {
    const post = expectPost(event.data, `${what}.data`);
    expectEqual(post.id, Number(event.subject), `${what}.data.id`);
  }
  return event as unknown as CloudEvent;
}

/** One JSON page of the feed, checked: 200, JSON, `events` of CloudEvents numbered on from `after`. */
async function page(
  api: ApiClient,
  after: number,
  limit = 1000,
): Promise<{ events: CloudEvent[]; next: number }> {
  const reply = await api.get(`${EVENTS}?after=${after}&limit=${limit}`);
  expectStatus(reply, 200);
  expectHeader(reply, "content-type", JSON_UTF8);
  const body = objectOf(jsonOf(reply), `${reply.request}: body`);
  expectKeys(body, ["events", "next"], `${reply.request}: body`);
  expectThat(Array.isArray(body.events), `${reply.request}: events`, "an array", body.events);
  const events = (body.events as unknown[]).map((event, i) =>
    expectCloudEvent(event, `${reply.request}: events[${i}]`),
  );
  events.forEach((event, i) => {
    expectEqual(Number(event.id), after + 1 + i, `${reply.request}: events[${i}].id (no gap)`);
  });
  expectEqual(body.next, events.length === 0 ? after : Number(events.at(-1)?.id), `${reply.request}: next`);
  return { events, next: body.next as number };
}

/**
 * The number of the newest event: the smallest `after` whose page is empty (a page is empty
 * exactly at or past the end), found by doubling and then halving, so that a long history
 * costs a few dozen requests, not a walk through it. A 410 means "before the end" too.
 */
async function currentEnd(api: ApiClient): Promise<number> {
  const emptyAt = async (after: number) => {
    const reply = await api.get(`${EVENTS}?after=${after}&limit=1`);
    if (reply.status === 410) return false;
    expectStatus(reply, 200);
    return (objectOf(jsonOf(reply), `${reply.request}: body`).events as unknown[]).length === 0;
  };
  if (await emptyAt(0)) return 0;
  let high = 1;
  while (!(await emptyAt(high))) high *= 2;
  let low = high / 2; // not empty, or 0
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (await emptyAt(middle)) high = middle;
    else low = middle;
  }
  return high;
}

/**
 * Polls the feed after `after` until `count` events about `subjects` are there, at most
 * `withinMs` after `since`; answers those events, in order.
 */
async function awaitEvents(
  api: ApiClient,
  after: number,
  subjects: ReadonlySet<number>,
  count: number,
  since: number,
  withinMs = FEED_DELAY_MS,
): Promise<CloudEvent[]> {
  for (;;) {
    const { events } = await page(api, after);
    const own = events.filter((event) => subjects.has(Number(event.subject)));
    if (own.length >= count) return own;
    if (Date.now() - since > withinMs) {
      throw new Mismatch(
        `GET ${EVENTS}?after=${after}`,
        `${count} events of posts ${show([...subjects])} within ${withinMs} ms of the response`,
        show(own.map((event) => `${event.id} ${event.type} ${event.subject}`)),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** One message of an event stream. */
interface StreamMessage {
  /** Milliseconds from the stream's opening to this message's arrival. */
  readonly at: number;
  readonly id?: string;
  readonly event?: string;
  readonly data?: string;
  readonly comment?: string;
}

/**
 * Opens the feed as Server-Sent Events and collects its messages until `done` holds of them or
 * `timeoutMs` passes; answers the status, content type and messages.
 */
async function readStream(
  api: ApiClient,
  pathAndQuery: string,
  headers: Record<string, string>,
  done: (messages: StreamMessage[]) => boolean,
  timeoutMs: number,
  onOpen: () => Promise<void> = async () => {},
): Promise<{ status: number; contentType: string | null; messages: StreamMessage[] }> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const messages: StreamMessage[] = [];
  try {
    const response = await fetch(api.url(pathAndQuery), {
      headers: { accept: "text/event-stream", ...headers },
      signal: abort.signal,
    });
    const contentType = response.headers.get("content-type");
    if (response.status !== 200 || response.body === null) {
      return { status: response.status, contentType, messages };
    }
    const opened = Date.now();
    await onOpen();
    const decoder = new TextDecoder();
    let buffer = "";
    let current: Record<string, string> = {};
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let newline = buffer.indexOf("\n");
        while (newline >= 0) {
          const line = buffer.slice(0, newline).replace(/\r$/, "");
          buffer = buffer.slice(newline + 1);
          if (line === "") {
            if (Object.keys(current).length > 0) messages.push({ ...current, at: Date.now() - opened });
            current = {};
          } else if (line.startsWith(":")) {
            messages.push({ comment: line.slice(1), at: Date.now() - opened });
          } else {
            const colon = line.indexOf(":");
            const value = colon < 0 ? "" : line.slice(colon + 1);
            current[colon < 0 ? line : line.slice(0, colon)] = value.startsWith(" ") ? value.slice(1) : value;
          }
          newline = buffer.indexOf("\n");
        }
        if (done(messages)) break;
      }
    } catch {
      // Aborted at the time limit: the caller judges what arrived.
    }
    return { status: response.status, contentType, messages };
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/** docs/change-events.md: GET /api/v1/posts/events, as JSON pages and as Server-Sent Events. */
export const changeEventCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "Accept: text/event-stream;q=0 (or a q below JSON's) gets the JSON page, not a stream",
    async run({ api }) {
      for (const accept of [
        "text/event-stream;q=0, application/json",
        "text/event-stream;q=0.5, application/json",
      ]) {
        const reply = await api.get(`${EVENTS}?limit=1`, { headers: { accept } });
        expectStatus(reply, 200);
        expectHeader(reply, "content-type", JSON_UTF8);
        expectKeys(
          objectOf(jsonOf(reply), `${reply.request}: body`),
          ["events", "next"],
          `${reply.request}: body`,
        );
      }
    },
  },
  {
    section,
    name: "a creation, an update and a deletion are post.created, post.updated and post.deleted CloudEvents, numbered on with no gap, in the feed within 1 s, data as GET writes the post",
    async run({ api, fixture }) {
      const writer = await fixture.register("events");
      const end = await currentEnd(api);
      const created = await api.post(POSTS, {
        token: writer.token,
        json: { title: "이벤트", content: "본문 😀" },
      });
      const createdAt = Date.now();
      expectStatus(created, 201);
      const id = Number(/\/(\d+)$/.exec(created.headers.get("location") ?? "")?.[1]);
      const subjects = new Set([id]);
      const [creation] = await awaitEvents(api, end, subjects, 1, createdAt);
      const asRead = expectPostReply(await api.get(`${POSTS}/${id}`));
      expectEqual(creation?.type, "post.created", "the first event's type");
      expectEqual(creation?.data, asRead, "post.created data (the post as GET /api/v1/posts/<id> writes it)");

      const patched = await api.patch(`${POSTS}/${id}`, { token: writer.token, json: { title: "고침" } });
      const patchedAt = Date.now();
      const afterPatch = expectPostReply(patched);
      const [, update] = await awaitEvents(api, end, subjects, 2, patchedAt);
      expectEqual(update?.type, "post.updated", "the second event's type");
      expectEqual(update?.data, afterPatch, "post.updated data (the post as PATCH answered it)");

      const deleted = await api.delete(`${POSTS}/${id}`, { token: writer.token });
      const deletedAt = Date.now();
      expectStatus(deleted, 204);
      const own = await awaitEvents(api, end, subjects, 3, deletedAt);
      expectEqual(own[2]?.type, "post.deleted", "the third event's type");
      expectEqual(own[2]?.data, { id }, "post.deleted data");
      expectThat(
        Number(own[0]?.id) < Number(own[1]?.id) && Number(own[1]?.id) < Number(own[2]?.id),
        "the post's event numbers",
        "increasing in the order of its changes",
        own.map((event) => event.id),
      );
    },
  },
  {
    section,
    name: "pages chain by next with no gap and no repeat; limit bounds a page; past the end a page is empty and next is after",
    async run({ api, fixture }) {
      const writer = await fixture.register("eventpages");
      const end = await currentEnd(api);
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) ids.push(await fixture.createPost(writer, { title: `p${i}` }));
      await awaitEvents(api, end, new Set(ids), 5, Date.now());
      const first = await page(api, end, 2);
      expectEqual(first.events.length, 2, `GET ${EVENTS}?after=${end}&limit=2: events`);
      const second = await page(api, first.next, 2);
      expectEqual(Number(second.events[0]?.id), end + 3, "the second page's first id");
      const last = await currentEnd(api);
      const beyond = await page(api, last + 1000);
      expectEqual(beyond, { events: [], next: last + 1000 }, `GET ${EVENTS}?after=${last + 1000}`);
    },
  },
  {
    section,
    name: "a replayed idempotent POST, a refused PATCH and a refused DELETE make no event; deleting the account makes one post.deleted per post",
    async run({ api, fixture }) {
      const writer = await fixture.register("eventnone");
      const other = await fixture.register("eventother");
      const key = `conformance-events-${Date.now()}`;
      const json = { title: "t", content: "c" };
      const before = await currentEnd(api);
      const first = await api.post(POSTS, { token: writer.token, headers: { "idempotency-key": key }, json });
      expectStatus(first, 201);
      const id = Number(/\/(\d+)$/.exec(first.headers.get("location") ?? "")?.[1]);
      const second = await fixture.createPost(writer, { title: "second" });
      await awaitEvents(api, before, new Set([id, second]), 2, Date.now(), 5000);
      const end = await currentEnd(api);
      expectStatus(
        await api.post(POSTS, { token: writer.token, headers: { "idempotency-key": key }, json }),
        201,
      );
      expectStatus(await api.patch(`${POSTS}/${id}`, { token: writer.token, json: { title: "" } }), 400);
      expectStatus(await api.patch(`${POSTS}/${id}`, { token: other.token, json: { title: "x" } }), 401);
      expectStatus(await api.delete(`${POSTS}/${id}`, { token: other.token }), 401);
      expectStatus(await api.delete(USER, { token: writer.token }), 204);
      // Gone: the final cleanup has nothing left to delete of it.
      fixture.forget(writer);
      const deletedAt = Date.now();
      const own = await awaitEvents(api, end, new Set([id, second]), 2, deletedAt);
      expectEqual(
        own.map((event) => [event.type, Number(event.subject)]).sort(),
        [
          ["post.deleted", id],
          ["post.deleted", second],
        ].sort(),
        "the events of the writer's posts after the replay, the refusals and the account's deletion",
      );
    },
  },
  {
    section,
    name: "after or limit not a non-negative integer in range → 400 envelope; PATCH and DELETE on the path → 403 envelope",
    async run({ api, fixture }) {
      for (const query of [
        "after=-1",
        "after=abc",
        "after=1.5",
        "after=",
        "limit=0",
        "limit=1001",
        "limit=x",
      ]) {
        expectEnvelope(await api.get(`${EVENTS}?${query}`), 400, EVENTS);
      }
      const writer = await fixture.shared("writer");
      for (const token of [undefined, writer.token]) {
        const options = token === undefined ? { json: { title: "x" } } : { token, json: { title: "x" } };
        expectEnvelope(await api.patch(EVENTS, options), 403, EVENTS);
        expectEnvelope(await api.delete(EVENTS, token === undefined ? {} : { token }), 403, EVENTS);
      }
    },
  },
  {
    section,
    name: "as Server-Sent Events: with Last-Event-ID n the stream starts at n + 1 (id, event, data: the CloudEvent on one line); ?after= too",
    async run({ api, fixture }) {
      const writer = await fixture.register("eventstream");
      const end = await currentEnd(api);
      const ids = [
        await fixture.createPost(writer, { title: "s1" }),
        await fixture.createPost(writer, { title: "s2" }),
      ];
      const own = await awaitEvents(api, end, new Set(ids), 2, Date.now(), 5000);
      const firstNumber = Number(own[0]?.id);
      for (const [path, headers] of [
        [EVENTS, { "last-event-id": String(firstNumber - 1) }],
        [`${EVENTS}?after=${firstNumber - 1}`, {}],
      ] as const) {
        const stream = await readStream(
          api,
          path,
          headers,
          (messages) => messages.filter((m) => m.id !== undefined).length >= 1,
          5000,
        );
        expectEqual(stream.status, 200, `GET ${path} (text/event-stream): status`);
        expectThat(
          (stream.contentType ?? "").toLowerCase().startsWith("text/event-stream"),
          `GET ${path}: content-type`,
          "text/event-stream",
          stream.contentType,
        );
        const message = stream.messages.find((m) => m.id !== undefined);
        expectEqual(message?.id, String(firstNumber), `GET ${path}: the first event's id`);
        expectEqual(message?.event, own[0]?.type, `GET ${path}: the first event's event field`);
        const data = expectCloudEvent(
          JSON.parse(message?.data ?? "null"),
          `GET ${path}: the first event's data`,
        );
        expectEqual(data, own[0], `GET ${path}: the first event's data (as the JSON page lists it)`);
      }
    },
  },
  {
    section,
    name: "as Server-Sent Events without Last-Event-ID: the stream starts at the current end and follows new changes within 1 s",
    async run({ api, fixture }) {
      const writer = await fixture.register("eventfollow");
      let id = 0;
      let answeredAt = 0;
      const stream = await readStream(
        api,
        EVENTS,
        {},
        (messages) => messages.some((m) => m.data?.includes(`"subject":"${id}"`) === true),
        5000,
        async () => {
          id = await fixture.createPost(writer, { title: "followed" });
          answeredAt = Date.now();
        },
      );
      const arrivedAt = Date.now();
      const events = stream.messages.filter((m) => m.id !== undefined);
      expectThat(
        events.length >= 1 && events.some((m) => m.data?.includes(`"subject":"${id}"`) === true),
        `GET ${EVENTS} (text/event-stream): events`,
        `the creation of post ${id}`,
        events,
      );
      // Events made before the stream opened are not replayed: the first is ours or later.
      const first = expectCloudEvent(JSON.parse(events[0]?.data ?? "null"), `GET ${EVENTS}: first event`);
      expectEqual(
        first.subject,
        String(id),
        `GET ${EVENTS}: the first event's subject (nothing before the stream opened)`,
      );
      expectThat(
        arrivedAt - answeredAt <= FEED_DELAY_MS,
        "the event's delay",
        `at most ${FEED_DELAY_MS} ms`,
        `${arrivedAt - answeredAt} ms`,
      );
    },
  },
  {
    section,
    name: "an idle event stream gets a comment line within 15 s",
    async run({ api }) {
      const end = await currentEnd(api);
      // Far past the end, so that nothing but comments can come.
      const idle = (messages: StreamMessage[]) =>
        messages.filter((m) => m.comment !== undefined && m.at >= 1000);
      const stream = await readStream(
        api,
        `${EVENTS}?after=${end + 1_000_000_000}`,
        {},
        (messages) => idle(messages).length >= 1,
        KEEP_ALIVE_MS + KEEP_ALIVE_MARGIN_MS,
      );
      // A comment sent as the stream opens proves nothing about an idle one: one after a second does.
      expectThat(
        idle(stream.messages).length >= 1,
        `GET ${EVENTS}?after=… (text/event-stream), idle`,
        `a comment line between 1 s and ${(KEEP_ALIVE_MS + KEEP_ALIVE_MARGIN_MS) / 1000} s after opening`,
        stream.messages,
      );
    },
  },
  {
    section,
    name: "a JSON page stops, after its first event, once its events hold 1 MiB; next continues it",
    async run({ api, fixture }) {
      const writer = await fixture.register("eventbytes");
      const end = await currentEnd(api);
      // 450 KiB of JSON each (three bytes a character): three of them pass 1 MiB.
      const content = "큰".repeat(150 * 1024);
      const ids = new Set<number>();
      for (let i = 0; i < 4; i++) ids.add(await fixture.createPost(writer, { title: `bytes ${i}`, content }));
      const bytes = (event: CloudEvent) => new TextEncoder().encode(JSON.stringify(event)).length;
      const seen: number[] = [];
      let after = end;
      for (const deadline = Date.now() + 5000; seen.length < ids.size; ) {
        const listed = await page(api, after);
        const request = `GET ${EVENTS}?after=${after}&limit=1000`;
        const sizes = listed.events.map(bytes);
        const before = sizes.slice(0, -1).reduce((sum, size) => sum + size, 0);
        expectThat(before < MIB, `${request}: bytes of JSON before its last event`, "under 1 MiB", before);
        for (const event of listed.events)
          if (ids.has(Number(event.subject))) seen.push(Number(event.subject));
        if (listed.events.length === 0) {
          if (Date.now() > deadline) {
            throw new Mismatch(request, `the events of posts ${show([...ids])}`, show(seen));
          }
          await new Promise((resolve) => setTimeout(resolve, 25));
          continue;
        }
        // Short of 1000 events and of the end, the page stopped for its bytes: it holds 1 MiB.
        const following = await page(api, listed.next, 1);
        if (listed.events.length < 1000 && following.events.length > 0) {
          const total = before + (sizes.at(-1) ?? 0);
          expectThat(total >= MIB, `${request}: bytes of JSON (a next page follows)`, "1 MiB or more", total);
        }
        after = listed.next;
      }
      expectEqual(seen, [...ids], `GET ${EVENTS}: the large posts' events, page after page`);
    },
  },
  {
    section,
    name: "past FEED_MAX_STREAMS_PER_ADDRESS open streams one address gets the 429 envelope with Retry-After; a stream that ends makes room",
    async run({ api, options }) {
      const opened: AbortController[] = [];
      const open = async () => {
        const abort = new AbortController();
        const response = await fetch(api.url(EVENTS), {
          headers: { accept: "text/event-stream" },
          signal: abort.signal,
        });
        // A refusal's body is read by the caller; a stream stays open until the case ends it.
        if (response.status === 200) opened.push(abort);
        return response;
      };
      try {
        // Behind a balancer each instance counts its own streams: up to ten instances' worth.
        let refused: Response | undefined;
        for (let i = 0; i < 10 * options.feedMaxStreamsPerAddress && refused === undefined; i++) {
          const response = await open();
          if (response.status !== 200) refused = response;
        }
        if (refused === undefined) {
          throw new Mismatch(
            `GET ${EVENTS} (text/event-stream), ${opened.length} at once`,
            "a 429 past FEED_MAX_STREAMS_PER_ADDRESS",
            "every stream opened",
          );
        }
        const request = `GET ${EVENTS} (text/event-stream) past ${opened.length} open`;
        expectThat(
          opened.length >= options.feedMaxStreamsPerAddress,
          `${request}: streams opened before the 429`,
          `at least ${options.feedMaxStreamsPerAddress}`,
          opened.length,
        );
        const bytes = new Uint8Array(await refused.arrayBuffer());
        const reply = {
          request,
          status: refused.status,
          headers: refused.headers,
          bytes,
          text: new TextDecoder().decode(bytes),
        };
        expectEnvelope(reply, 429, EVENTS);
        const retryAfter = refused.headers.get("retry-after");
        expectThat(
          retryAfter !== null && /^[0-9]+$/.test(retryAfter) && Number(retryAfter) > 0,
          `${request}: Retry-After`,
          "a positive number of seconds",
          retryAfter,
        );
        // Every stream ends. The service frees a stream's place once its connection closes; a proxy
        // in front may close its own connection to the service only when it next writes to the
        // client it lost, which the stream's comment line makes happen within 15 s.
        for (const abort of opened.splice(0)) abort.abort();
        for (const deadline = Date.now() + 20_000; ; ) {
          const response = await open();
          if (response.status === 200) break;
          await response.text();
          if (Date.now() > deadline) {
            throw new Mismatch(
              `GET ${EVENTS} (text/event-stream)`,
              "200 once the streams ended",
              String(response.status),
            );
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      } finally {
        for (const abort of opened) abort.abort();
      }
    },
  },
];
