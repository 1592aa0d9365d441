import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SUBJECTS } from "@posts/adapters-nats";
import {
  natsServerForTests,
  readStream,
  type StreamMessage,
  startNatsServer,
  type TestNatsServer,
} from "@posts/adapters-nats/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { idFromLocation, jsonRequest } from "./reliability/api-client.js";
import { registerAndLogIn } from "./support/register-and-log-in.js";
import { type ListeningService, runCommand, startService } from "./support/service-process.js";

const NATS_PORT = 21308;

/** The stream's messages once it holds `count`, or after 20 s what it holds (the caller's assertions say what is missing). */
async function streamWith(url: string, count: number): Promise<StreamMessage[]> {
  let messages: StreamMessage[] = [];
  await vi
    .waitFor(
      async () => {
        messages = await readStream(url);
        if (messages.length < count) throw new Error(`${messages.length} of ${count} messages`);
      },
      { timeout: 20_000, interval: 100 },
    )
    .catch(() => undefined);
  return messages;
}

// The quick start's embedded database with NATS_URL: the one process always publishes.
describeNeeding(
  natsServerForTests(),
  "the service on the embedded database with NATS_URL, as a real process",
  () => {
    let dataDir: string;
    let nats: TestNatsServer;
    let service: ListeningService | undefined;
    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), "posts-e2e-nats-"));
      nats = await startNatsServer(NATS_PORT);
      // PGlite's first initdb can take longer than a start is given on a busy machine: done here.
      const migrated = await runCommand(["migrate"], { DATA_DIR: dataDir });
      expect(migrated.code, migrated.stderr).toBe(0);
    });
    afterAll(async () => {
      await service?.stop();
      await nats?.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    it("publishes each change to the stream POSTS as the feed serves it, resumes after a restart of the service, and publishes what was written while NATS was down", async () => {
      service = await startService({ DATA_DIR: dataDir, NATS_URL: nats.url });
      const { token } = await registerAndLogIn(service.url);
      const created = await fetch(
        `${service.url}/api/v1/posts`,
        jsonRequest("POST", { title: "t", content: "c" }, token),
      );
      const id = idFromLocation(created.headers.get("location"));
      await fetch(`${service.url}/api/v1/posts/${id}`, jsonRequest("PATCH", { title: "t2" }, token));
      await fetch(`${service.url}/api/v1/posts/${id}`, {
        method: "DELETE",
        headers: { "x-auth-token": token },
      });

      const page = (await (await fetch(`${service.url}/api/v1/posts/events?after=0`)).json()) as {
        events: { id: string; type: keyof typeof SUBJECTS }[];
      };
      expect(page.events.map((event) => event.type)).toEqual([
        "post.created",
        "post.updated",
        "post.deleted",
      ]);
      const stream = await streamWith(nats.url, 3);
      expect(stream.map((message) => [message.sequence, message.id, message.subject])).toEqual(
        page.events.map((event, i) => [i + 1, event.id, SUBJECTS[event.type]]),
      );
      expect(stream.map((message) => JSON.parse(message.body))).toEqual(page.events);

      // Stopped and started again on the same data: it publishes what follows, nothing twice.
      expect((await service.stop()).code).toBe(0);
      service = await startService({ DATA_DIR: dataDir, NATS_URL: nats.url });
      await fetch(
        `${service.url}/api/v1/posts`,
        jsonRequest("POST", { title: "again", content: "c" }, token),
      );
      const after = await streamWith(nats.url, 4);
      expect(after.map((message) => Number(message.id))).toEqual([1, 2, 3, 4]);

      // NATS gone: writes still succeed, and their events are published once it is back.
      await nats.kill("SIGKILL");
      const whileDown = await fetch(
        `${service.url}/api/v1/posts`,
        jsonRequest("POST", { title: "down", content: "c" }, token),
      );
      expect(whileDown.status).toBe(201);
      await nats.restart();
      const recovered = await streamWith(nats.url, 5);
      expect(recovered.map((message) => Number(message.id))).toEqual([1, 2, 3, 4, 5]);
    });

    it("publishes an event larger than the NATS server's max_payload as a reference whose dataref reads the whole event from the feed", async () => {
      service ??= await startService({ DATA_DIR: dataDir, NATS_URL: nats.url });
      const { token } = await registerAndLogIn(service.url);
      const before = (await readStream(nats.url)).length;
      // Over nats-server's default max_payload of 1 MB.
      const content = "가".repeat(700_000);
      const created = await fetch(
        `${service.url}/api/v1/posts`,
        jsonRequest("POST", { title: "big", content }, token),
      );
      expect(created.status).toBe(201);
      const id = idFromLocation(created.headers.get("location"));
      await fetch(
        `${service.url}/api/v1/posts`,
        jsonRequest("POST", { title: "small", content: "c" }, token),
      );

      const stream = await streamWith(nats.url, before + 2);
      const [big, small] = stream.slice(before).map((message) => JSON.parse(message.body));
      const number = Number(big.id);
      expect(big).toStrictEqual({
        specversion: "1.0",
        id: String(number),
        source: "/api/v1/posts",
        type: "post.created",
        subject: String(id),
        time: expect.any(String),
        datacontenttype: "application/json",
        dataref: `/api/v1/posts/events?after=${number - 1}&limit=1`,
        data: { id },
      });
      const referred = (await (await fetch(`${service.url}${big.dataref}`)).json()) as {
        events: { id: string; time: string; data: { content: string } }[];
      };
      expect(referred.events).toHaveLength(1);
      expect(referred.events[0]?.id).toBe(big.id);
      expect(referred.events[0]?.time).toBe(big.time);
      expect(referred.events[0]?.data.content).toBe(content);
      // The events after it go whole, as ever.
      expect(small.id).toBe(String(number + 1));
      expect(small.data.title).toBe("small");
    });
  },
);
