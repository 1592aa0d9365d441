import { request, STATUS_CODES } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { STREAM_BATCH_BYTES } from "../../src/events/event-stream.js";
import { openStream } from "../support/event-stream-client.js";
import { JSON_UTF8, TIMESTAMP } from "../support/expectations.js";
import { buildTestApp, type TestApp } from "../support/test-app.js";

const EVENTS = "/api/v1/posts/events";
const T0 = new Date("2026-11-22T10:15:30.123Z");

/** Stores `count` posts of `bytes` bytes of content each, straight in the repository. */
async function plant(testApp: TestApp, count: number, bytes: number): Promise<void> {
  const author = await testApp.aUserWithToken();
  for (let i = 0; i < count; i++) {
    await testApp.deps.posts.create({
      authorId: author.id,
      title: `big ${i}`,
      content: String.fromCharCode(97 + (i % 26)).repeat(bytes),
      createdAt: T0,
    });
  }
}

/** One scrape of GET /metrics: the value of a series by its name and labels (`name{label="…"}`). */
async function scrape(testApp: TestApp): Promise<(series: string) => number> {
  const rows = (await testApp.app.inject({ method: "GET", url: "/metrics" })).body.split("\n");
  return (series) => {
    const row = rows.find((line) => line.startsWith(`${series} `));
    if (row === undefined) throw new Error(`no metric ${series}`);
    return Number(row.slice(series.length + 1));
  };
}

/** The value of one series at GET /metrics. */
const metric = async (testApp: TestApp, series: string) => (await scrape(testApp))(series);

/** Asks `check` every 25 ms until it answers true; fails, naming `what`, after `timeoutMs`. */
async function eventually(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  await expect
    .poll(check, { timeout: timeoutMs, interval: 25, message: `not within ${timeoutMs} ms: ${what}` })
    .toBe(true);
}

/**
 * A stream read over a real socket that keeps nothing but the ids it saw (the events are large)
 * and reads only while `reading` is true: paused, the socket stops taking data, as a client that
 * stops reading does.
 */
function lightStream(port: number, path: string, headers: Record<string, string> = {}) {
  const ids: number[] = [];
  let carry = "";
  let ended = false;
  const req = request({
    host: "127.0.0.1",
    port,
    path,
    headers: { accept: "text/event-stream", ...headers },
  });
  const opened = new Promise<{ status: number; pause: () => void; resume: () => void }>((resolve, reject) => {
    req.on("error", () => {
      ended = true;
    });
    req.on("response", (response) => {
      response.setEncoding("latin1");
      response.on("data", (chunk: string) => {
        // Ids start lines; the posts' contents here are letters only, so "id: " starts a message.
        // `carry` is the start of the line the last chunk left unfinished, so each byte is scanned
        // once: a line longer than an id line is no id line, and is carried as a mark that says so
        // (carrying it whole would scan a megabyte-long data line again with every chunk).
        const text = carry + chunk;
        for (const match of text.matchAll(/^id: (\d+)\n/gm)) ids.push(Number(match[1]));
        const rest = text.slice(text.lastIndexOf("\n") + 1);
        carry = rest.length <= 32 ? rest : "-";
      });
      const end = () => {
        ended = true;
      };
      response.on("end", end);
      response.on("close", end);
      response.on("aborted", end);
      resolve({
        status: response.statusCode ?? 0,
        pause: () => response.pause(),
        resume: () => response.resume(),
      });
    });
    req.on("error", reject);
    req.end();
  });
  return {
    opened,
    ids,
    get ended() {
      return ended;
    },
    close: () => req.destroy(),
  };
}

describe("an event stream whose client stops reading", () => {
  it("is disconnected once it has held its batch past the stall time, while another stream receives every event in order", async () => {
    const testApp = await buildTestApp({ eventStreamStallMs: 1500 });
    try {
      await testApp.app.listen({ port: 0, host: "127.0.0.1" });
      const { port } = testApp.app.server.address() as AddressInfo;
      // 20 MB in all: far more than the kernel's socket buffers hold for a client that stops.
      const count = 40;
      const size = 512 * 1024;
      await plant(testApp, count, size);

      const stopped = lightStream(port, `${EVENTS}?after=0`);
      (await stopped.opened).pause();
      const reader = lightStream(port, `${EVENTS}?after=0`);
      await reader.opened;

      let mostBuffered = 0;
      await eventually(
        async () => {
          mostBuffered = Math.max(mostBuffered, await metric(testApp, "event_stream_buffered_bytes"));
          return (await metric(testApp, "event_streams_stalled_total")) >= 1;
        },
        20_000,
        "the stopped stream is disconnected",
      );
      // Whatever the stopped client left untaken, the server held one batch of it at most: one
      // event of `size` (a batch holds at least one), and perhaps the reader's.
      expect(mostBuffered).toBeLessThanOrEqual(2 * (size + 1024) + STREAM_BATCH_BYTES);
      await eventually(async () => reader.ids.length >= count, 20_000, "the reader receives every event");
      expect(reader.ids).toEqual(Array.from({ length: count }, (_, i) => i + 1));
      expect(reader.ended).toBe(false);
      expect(await metric(testApp, "event_streams_open")).toBe(1);

      // Read again, the stopped client finds its stream ended short of the end.
      (await stopped.opened).resume();
      await eventually(async () => stopped.ended, 5000, "the stopped client sees its stream end");
      expect(stopped.ids.length).toBeLessThan(count);
      expect(stopped.ids).toEqual(Array.from({ length: stopped.ids.length }, (_, i) => i + 1));
      reader.close();
    } finally {
      await testApp.app.close();
    }
  }, 60_000);
});

describe("replays of large events", () => {
  it("share one read and one turn per batch, hold at most four batches at once, every stream receiving every event in order", async () => {
    const testApp = await buildTestApp();
    try {
      await testApp.app.listen({ port: 0, host: "127.0.0.1" });
      const { port } = testApp.app.server.address() as AddressInfo;
      const count = 16;
      const size = 1024 * 1024;
      await plant(testApp, count, size);

      // Two streams from each of sixteen starts: more batches wanted at once than there are turns.
      const starts = Array.from({ length: 2 * count }, (_, i) => i % count);
      const streams = starts.map((after) => lightStream(port, `${EVENTS}?after=${after}`));
      const controls = await Promise.all(streams.map((stream) => stream.opened));
      // Slow readers: each reads in bursts, so that batches wait in the sockets for a while.
      let reading = true;
      const pacing = (async () => {
        while (reading) {
          for (const control of controls) control.pause();
          await sleep(40);
          for (const control of controls) control.resume();
          await sleep(10);
        }
      })();
      let mostActive = 0;
      let mostBuffered = 0;
      await eventually(
        async () => {
          const value = await scrape(testApp);
          mostActive = Math.max(mostActive, value('event_log_readers{state="active"}'));
          mostBuffered = Math.max(mostBuffered, value("event_stream_buffered_bytes"));
          return streams.every((stream, i) => stream.ids.length >= count - (starts[i] as number));
        },
        60_000,
        "every stream receives every event",
      );
      reading = false;
      await pacing;
      streams.forEach((stream, i) => {
        const after = starts[i] as number;
        expect(stream.ids).toEqual(Array.from({ length: count - after }, (_, k) => after + k + 1));
      });
      // Four turns at once, each held by one batch however many streams write it, and the
      // replays wanting another batch waited for a turn (counted, as a wait may fall between
      // two scrapes).
      expect(mostActive).toBeLessThanOrEqual(4);
      expect(await metric(testApp, "event_log_reader_waits_total")).toBeGreaterThan(0);
      // Each socket holds at most one batch (of one event); the streams sharing a batch hold the
      // same bytes, which the sum counts once per socket.
      expect(mostBuffered).toBeLessThanOrEqual(starts.length * (size + 1024));
      for (const stream of streams) stream.close();
    } finally {
      await testApp.app.close();
    }
  }, 90_000);
});

describe("the caps on open streams", () => {
  it("answers 429 with Retry-After past the cap per address and the cap per instance, and a stream that ends makes room", async () => {
    const testApp = await buildTestApp({
      trustProxy: true,
      eventStreamCaps: { maxStreams: 3, maxStreamsPerAddress: 2 },
    });
    try {
      await testApp.app.listen({ port: 0, host: "127.0.0.1" });
      const { port } = testApp.app.server.address() as AddressInfo;
      const from = (address: string) => ({ "x-forwarded-for": address });
      const first = await openStream(port, EVENTS, from("198.51.100.1"));
      const second = await openStream(port, EVENTS, from("198.51.100.1"));
      expect([first.response.statusCode, second.response.statusCode]).toEqual([200, 200]);

      const refusal = async (address: string) => {
        const response = await testApp.app.inject({
          method: "GET",
          url: EVENTS,
          headers: { accept: "text/event-stream", ...from(address) },
        });
        return {
          status: response.statusCode,
          retryAfter: response.headers["retry-after"],
          type: response.headers["content-type"],
          body: response.json(),
        };
      };
      const byAddress = await refusal("198.51.100.1");
      expect(byAddress).toStrictEqual({
        status: 429,
        retryAfter: "5",
        type: JSON_UTF8,
        body: {
          timestamp: expect.stringMatching(TIMESTAMP),
          status: 429,
          error: STATUS_CODES[429],
          path: EVENTS,
          message: expect.any(String),
        },
      });

      // Another address still gets one, up to the instance's cap.
      const third = await openStream(port, EVENTS, from("198.51.100.2"));
      expect(third.response.statusCode).toBe(200);
      expect((await refusal("198.51.100.3")).status).toBe(429);
      // A JSON page is no stream: never refused by the caps.
      const page = await testApp.app.inject({
        method: "GET",
        url: `${EVENTS}?after=0`,
        headers: from("198.51.100.1"),
      });
      expect(page.statusCode).toBe(200);

      // The first address's stream ends: its place is free, for that address or another.
      first.close();
      await eventually(
        async () => (await metric(testApp, "event_streams_open")) === 2,
        5000,
        "the stream ends",
      );
      const again = await openStream(port, EVENTS, from("198.51.100.3"));
      expect(again.response.statusCode).toBe(200);
      for (const stream of [second, third, again]) stream.close();
    } finally {
      await testApp.app.close();
    }
  });
});
