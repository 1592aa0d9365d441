import { describe, expect, it } from "vitest";
import { createClient, type PostEvent } from "../src/index.js";

const event = (id: number, type = "post.created") =>
  ({
    specversion: "1.0",
    id: String(id),
    source: "/api/v1/posts",
    type,
    subject: "1",
    time: "2026-11-22T10:15:30.123Z",
    datacontenttype: "application/json",
    data: { id: 1 },
  }) as PostEvent;
const sse = (ids: number[]) =>
  ids.map((id) => `id: ${id}\nevent: post.created\ndata: ${JSON.stringify(event(id))}\n\n`);

/** A stream that sends `chunks`, then ends, or fails like a cut connection when `cut`. */
function stream(chunks: string[], cut: boolean): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const left = [...chunks];
  // One chunk per read, so that a cut comes after what was already delivered, as on a socket.
  return new ReadableStream({
    pull(controller) {
      const chunk = left.shift();
      if (chunk !== undefined) controller.enqueue(encoder.encode(chunk));
      else if (cut) controller.error(new TypeError("terminated"));
      else controller.close();
    },
  });
}

describe("the change feed", () => {
  it("resumes after a cut with Last-Event-ID and yields no event twice, comments and split chunks aside", async () => {
    const requests: Array<Headers> = [];
    const bodies = [
      // A comment, then an event split across two chunks, then a cut.
      stream(
        [
          ": keep-alive\n\n",
          ...sse([1]),
          ...sse([2]).map((text) => text.slice(0, 20)),
          sse([2])[0]?.slice(20) ?? "",
        ],
        true,
      ),
      // The service resends 2 (as a resume may), then 3, then ends the stream.
      stream([...sse([2]), ...sse([3])], false),
      stream(['event: reset\ndata: {"oldest":10}\n\n'], false),
    ];
    const fetch = async (_url: string | URL | Request, init: RequestInit = {}) => {
      requests.push(new Headers(init.headers));
      return new Response(bodies.shift() ?? null, {
        status: 200,
        headers: { "content-type": "text/event-stream" },
      });
    };
    const client = createClient({
      baseUrl: "http://x",
      fetch: fetch as typeof globalThis.fetch,
      retry: { baseDelayMs: 1 },
    });
    const feed = client.events.follow();
    const seen: string[] = [];
    for await (const received of feed) seen.push(received.id);
    expect(seen).toEqual(["1", "2", "3"]);
    expect(requests.map((headers) => headers.get("last-event-id"))).toEqual([null, "2", "3"]);
    expect(requests[0]?.get("accept")).toBe("text/event-stream");
    expect(feed.error).toMatchObject({ kind: "gone" });
    expect(feed.lastEventId).toBe(3);
  });

  it("starts after the number given, and ends on a refusal with the typed error", async () => {
    const requests: Array<Headers> = [];
    const fetch = async (_url: string | URL | Request, init: RequestInit = {}) => {
      requests.push(new Headers(init.headers));
      return new Response(JSON.stringify({ message: "after" }), {
        status: 400,
        headers: { "content-type": "application/json" },
      });
    };
    const feed = createClient({ baseUrl: "http://x", fetch: fetch as typeof globalThis.fetch }).events.follow(
      { after: 41 },
    );
    for await (const _ of feed) expect.fail("no event expected");
    expect(requests[0]?.get("last-event-id")).toBe("41");
    expect(feed.error).toMatchObject({ kind: "validation", status: 400 });
  });

  it("gives up after maxAttempts failed connections in a row", async () => {
    let calls = 0;
    const fetch = async () => {
      calls += 1;
      throw new TypeError("fetch failed");
    };
    const feed = createClient({
      baseUrl: "http://x",
      fetch: fetch as typeof globalThis.fetch,
      retry: { baseDelayMs: 1, maxAttempts: 3 },
    }).events.follow({ after: 0 });
    for await (const _ of feed) expect.fail("no event expected");
    expect(calls).toBe(3);
    expect(feed.error).toMatchObject({ kind: "network" });
  });
});
