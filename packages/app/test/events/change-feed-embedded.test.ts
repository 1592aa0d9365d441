import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idFromLocation, jsonRequest, signUp } from "../reliability/api-client.js";
import { readEventStream } from "../support/event-stream-reader.js";
import { type ListeningService, startService } from "../support/service-process.js";

const EVENTS = "/api/v1/posts/events";

// The quick start's database: the feed must work with no other server.
describe("the change feed of the service on the embedded database, as a real process", () => {
  let dataDir: string;
  let service: ListeningService | undefined;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "posts-events-"));
    service = await startService({ DATA_DIR: dataDir });
  });
  afterAll(async () => {
    await service?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("streams each change within a second of its response, numbered from 1 with no gap, and pages the same", async () => {
    const url = (service as ListeningService).url;
    const stream = await readEventStream(`${url}${EVENTS}`);
    try {
      expect(stream.status).toBe(200);
      expect(stream.contentType).toBe("text/event-stream");
      const { token } = await signUp(url);
      const answered: number[] = [];
      const created = await fetch(
        `${url}/api/v1/posts`,
        jsonRequest("POST", { title: "t", content: "c" }, token),
      );
      answered.push(Date.now());
      const id = idFromLocation(created.headers.get("location"));
      await stream.until((events) => events.length >= 1, 1000);
      const patched = await fetch(`${url}/api/v1/posts/${id}`, jsonRequest("PATCH", { title: "t2" }, token));
      answered.push(Date.now());
      expect(patched.status).toBe(200);
      await stream.until((events) => events.length >= 2, 1000);
      const deleted = await fetch(`${url}/api/v1/posts/${id}`, {
        method: "DELETE",
        headers: { "x-auth-token": token },
      });
      answered.push(Date.now());
      expect(deleted.status).toBe(204);
      await stream.until((events) => events.length >= 3, 1000);

      expect(stream.events.map((event) => [event.id, event.event])).toEqual([
        ["1", "post.created"],
        ["2", "post.updated"],
        ["3", "post.deleted"],
      ]);
      stream.events.forEach((event, i) => {
        expect(event.arrivedAt - (answered[i] as number)).toBeLessThan(1000);
      });
      expect(JSON.parse(stream.events[1]?.data ?? "").data).toEqual(await patched.json());

      const page = (await (await fetch(`${url}${EVENTS}?after=0`)).json()) as {
        next: number;
        events: unknown[];
      };
      expect(page.next).toBe(3);
      expect(page.events.map((event) => JSON.stringify(event))).toEqual(
        stream.events.map((event) => event.data),
      );
      // Resumed with Last-Event-ID, the stream starts right after it.
      const resumed = await readEventStream(`${url}${EVENTS}`, { "last-event-id": "1" });
      try {
        await resumed.until((events) => events.length >= 2);
        expect(resumed.events.map((event) => event.id)).toEqual(["2", "3"]);
      } finally {
        resumed.close();
      }
    } finally {
      stream.close();
    }
  });

  it("keeps the numbers across a restart: the next change is numbered after the last", async () => {
    const stopped = await (service as ListeningService).stop();
    expect(stopped).toMatchObject({ code: 0 });
    service = await startService({ DATA_DIR: dataDir });
    const { url } = service;
    const { token } = await signUp(url);
    await fetch(`${url}/api/v1/posts`, jsonRequest("POST", { title: "after restart", content: "c" }, token));
    const stream = await readEventStream(`${url}${EVENTS}`, { "last-event-id": "3" });
    try {
      await stream.until((events) => events.length >= 1, 2000);
      expect(stream.events.map((event) => [event.id, event.event])).toEqual([["4", "post.created"]]);
    } finally {
      stream.close();
    }
  });
});
