import { setTimeout as sleep } from "node:timers/promises";
import { SUBJECTS } from "@posts/adapters-nats";
import {
  natsServerForTests,
  readStream,
  startNatsServer,
  type TestNatsServer,
} from "@posts/adapters-nats/testing";
import { postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, expect, it, vi } from "vitest";
import { type ServiceCluster, startCluster } from "../multi-instance/service-cluster.js";
import { idFromLocation, jsonRequest } from "../reliability/api-client.js";
import { TEST_JWT_SECRET } from "../support/service-process.js";
import type { CloudEvent, PostJson } from "../support/wire-json.js";
import { Fleet } from "./fleet.js";
import { type Attempt, Ledger, matchPost } from "./ledger.js";
import { SseFollower } from "./sse-follower.js";

const NATS_PORT = 21309;
/** Write requests sent in all, failing ones included. */
const WRITES = 5000;
const WRITERS = 8;
/** Writers that delete their account at the end, taking their posts with them. */
const LEAVING = 2;

interface Writer {
  readonly index: number;
  readonly token: string;
  /** Its posts it may still write to: created, acknowledged, not deleted, no write left unanswered. */
  readonly posts: number[];
  /** All its posts, for the cascade at the end. */
  readonly everPosted: Set<number>;
  created: number;
}

/** Whatever an instance answered, or `undefined` when the connection died without an answer. */
async function send(
  url: string,
  init: RequestInit,
): Promise<{ status: number; body: string; headers: Headers } | undefined> {
  try {
    const response = await fetch(url, init);
    return { status: response.status, body: await response.text(), headers: response.headers };
  } catch {
    return undefined;
  }
}

const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(Math.random() * items.length)];

describeNeeding(
  [await postgresForTests(), natsServerForTests()],
  "change events through crashes of instances and of NATS",
  () => {
    let nats: TestNatsServer | undefined;
    let cluster: ServiceCluster | undefined;
    let fleet: Fleet | undefined;
    afterAll(async () => {
      await Promise.all((fleet?.started ?? []).map((instance) => instance.kill()));
      await cluster?.close();
      await nats?.close();
    });

    it(`${WRITES} writes from ${WRITERS} clients, the publisher killed twice, NATS restarted: every change once, in order, in the feed and the stream`, async () => {
      nats = await startNatsServer(NATS_PORT);
      const env = { NATS_URL: nats.url, DB_POOL_SIZE: "4" };
      cluster = await startCluster({ size: 3, env });
      const database = cluster.database.connectionString as string;
      const currentFleet = new Fleet(cluster.instances, {
        DATABASE_URL: database,
        JWT_SECRET: TEST_JWT_SECRET,
        ...env,
      });
      fleet = currentFleet;
      const ledger = new Ledger();
      const chaos: string[] = [];

      // Writers: each owns its posts and writes them one request at a time, so it knows their order.
      const writers: Writer[] = [];
      for (let index = 0; index < WRITERS; index++) {
        const email = `chaos-${index}-${Date.now()}@example.com`;
        const credentials = jsonRequest("POST", { email, password: "chaos password" });
        const registered = await send(`${currentFleet.url()}/api/v1/user`, credentials);
        expect(registered?.status).toBe(201);
        const login = await send(`${currentFleet.url()}/api/v1/user/login`, credentials);
        expect(login?.status).toBe(200);
        const { token } = JSON.parse(login?.body ?? "{}") as { token: string };
        writers.push({ index, token, posts: [], everPosted: new Set(), created: 0 });
      }

      // Followers of the SSE feed, dropped every few seconds and resumed on any instance.
      const followers = [
        new SseFollower(
          () => currentFleet.url(),
          () => 500 + Math.random() * 2500,
          { after: 0 },
        ),
        new SseFollower(
          () => currentFleet.url(),
          () => 1000 + Math.random() * 3000,
          { after: 0 },
        ),
        new SseFollower(
          () => currentFleet.url(),
          () => 500 + Math.random() * 2500,
        ),
        new SseFollower(
          () => currentFleet.url(),
          () => 2000 + Math.random() * 4000,
        ),
      ];
      for (const follower of followers) follower.start();

      const write = async (writer: Writer) => {
        const seq = ledger.writes++;
        const url = currentFleet.url();
        const roll = Math.random();
        const own = pick(writer.posts);
        if (roll < 0.35 || own === undefined) {
          const title = `w${writer.index}-c${writer.created++}`;
          const content = `content ${seq}`;
          const key = Math.random() < 0.3 ? `k-${writer.index}-${seq}` : undefined;
          const init = jsonRequest("POST", { title, content }, writer.token);
          if (key !== undefined) (init.headers as Record<string, string>)["idempotency-key"] = key;
          let answer = await send(`${url}/api/v1/posts`, init);
          // With a key, a creation never answered is simply sent again: one post either way.
          for (
            let retry = 0;
            key !== undefined && (answer === undefined || answer.status >= 500) && retry < 20;
            retry++
          ) {
            await sleep(100);
            ledger.writes++;
            answer = await send(`${currentFleet.url()}/api/v1/posts`, init);
          }
          const attempt: Attempt = { kind: "create", title, content, outcome: "unknown" };
          if (answer === undefined || answer.status >= 500) {
            ledger.unknown++;
            ledger.unknownCreations.set(title, attempt);
            return;
          }
          expect(answer.status, answer.body).toBe(201);
          attempt.outcome = "acknowledged";
          const id = idFromLocation(answer.headers.get("location"));
          ledger.add(id, attempt);
          writer.posts.push(id);
          writer.everPosted.add(id);
          if (key !== undefined && Math.random() < 0.3) {
            // A replay creates nothing and makes no event.
            ledger.writes++;
            const replay = await send(`${currentFleet.url()}/api/v1/posts`, init);
            if (replay !== undefined && replay.status < 500) {
              expect(replay.status).toBe(201);
              expect(replay.headers.get("idempotent-replayed")).toBe("true");
              expect(idFromLocation(replay.headers.get("location"))).toBe(id);
            }
          }
          return;
        }
        if (roll < 0.75) {
          const staleTag = Math.random() < 0.08;
          const which = Math.random();
          const body = {
            ...(which < 0.7 ? { title: `w${writer.index}-u${seq}` } : {}),
            ...(which >= 0.4 ? { content: `updated ${seq}` } : {}),
          };
          const init = jsonRequest("PATCH", body, writer.token);
          if (staleTag) (init.headers as Record<string, string>)["if-match"] = '"stale"';
          const answer = await send(`${url}/api/v1/posts/${own}`, init);
          const attempt: Attempt = { kind: "update", ...body, outcome: "unknown" };
          ledger.add(own, attempt);
          if (answer === undefined || answer.status >= 500) {
            ledger.unknown++;
            writer.posts.splice(writer.posts.indexOf(own), 1);
            return;
          }
          if (staleTag) {
            expect(answer.status).toBe(412);
            attempt.outcome = "refused";
            ledger.refused++;
            return;
          }
          expect(answer.status, answer.body).toBe(200);
          attempt.outcome = "acknowledged";
          attempt.post = JSON.parse(answer.body) as PostJson;
          return;
        }
        if (roll < 0.87) {
          const answer = await send(`${url}/api/v1/posts/${own}`, {
            method: "DELETE",
            headers: { "x-auth-token": writer.token },
          });
          const attempt: Attempt = { kind: "delete", outcome: "unknown" };
          ledger.add(own, attempt);
          writer.posts.splice(writer.posts.indexOf(own), 1);
          if (answer === undefined || answer.status >= 500) {
            ledger.unknown++;
            return;
          }
          expect(answer.status, answer.body).toBe(204);
          attempt.outcome = "acknowledged";
          return;
        }
        // Requests that fail: bad input, no such post, another author's post.
        const others = writers.filter((other) => other !== writer && other.posts.length > 0);
        const theirs = pick(others.flatMap((other) => other.posts));
        // Another author's post is 401, or 404 when its author deleted it meanwhile.
        const failing: [string, RequestInit, number[]][] = [
          [`/api/v1/posts/${own}`, jsonRequest("PATCH", { title: "   " }, writer.token), [400]],
          ["/api/v1/posts", jsonRequest("POST", { title: "", content: "x" }, writer.token), [400]],
          ["/api/v1/posts/999999999", jsonRequest("PATCH", { title: "none" }, writer.token), [404]],
          ...(theirs === undefined
            ? []
            : ([
                [
                  `/api/v1/posts/${theirs}`,
                  jsonRequest("PATCH", { title: "not mine" }, writer.token),
                  [401, 404],
                ],
                [
                  `/api/v1/posts/${theirs}`,
                  { method: "DELETE", headers: { "x-auth-token": writer.token } },
                  [401, 404],
                ],
              ] as [string, RequestInit, number[]][])),
        ];
        const [path, init, expected] = pick(failing) as [string, RequestInit, number[]];
        const answer = await send(`${url}${path}`, init);
        ledger.refused++;
        if (answer !== undefined && answer.status < 500)
          expect(answer.status, `${path}: ${answer.body}`).toBeOneOf(expected);
      };

      const writing = writers.map(async (writer) => {
        while (ledger.writes < WRITES) await write(writer);
      });

      // The chaos, at fixed points of the writing.
      const reach = async (writes: number) => {
        // The test's own timeout (240 s) is the deadline.
        await expect
          .poll(() => ledger.writes, { timeout: 240_000, interval: 20 })
          .toBeGreaterThanOrEqual(writes);
      };
      const killPublisher = async () => {
        const victim = currentFleet.publisher();
        expect(victim, "an instance publishes").toBeDefined();
        if (victim === undefined) return;
        await currentFleet.kill(victim);
        const killedAt = Date.now();
        chaos.push(`SIGKILL to the publisher (port ${victim.port}) at write ${ledger.writes}`);
        const replacement = currentFleet.add();
        await vi.waitFor(
          () => expect(currentFleet.publisher(), "another instance took over publishing").toBeDefined(),
          {
            timeout: 15_000,
            interval: 50,
          },
        );
        chaos.push(`another instance published ${Date.now() - killedAt} ms after the kill`);
        await replacement;
      };
      const havoc = (async () => {
        await reach(WRITES * 0.15);
        await killPublisher();
        await reach(WRITES * 0.4);
        await nats?.kill("SIGKILL");
        chaos.push(`SIGKILL to NATS at write ${ledger.writes}`);
        await sleep(1500);
        await nats?.restart();
        chaos.push(`NATS restarted at write ${ledger.writes}`);
        await reach(WRITES * 0.65);
        await killPublisher();
      })();

      const startedAt = Date.now();
      await Promise.all([...writing, havoc]);
      const writtenInMs = Date.now() - startedAt;

      // Two writers leave: their accounts go, and every post of theirs with them.
      for (const writer of writers.slice(0, LEAVING)) {
        let gone = false;
        for (let tries = 0; !gone && tries < 20; tries++) {
          const answer = await send(`${currentFleet.url()}/api/v1/user`, {
            method: "DELETE",
            headers: { "x-auth-token": writer.token },
          });
          // 401 on a retry: the first one went through although its answer was lost.
          gone = answer?.status === 204 || (tries > 0 && answer?.status === 401);
        }
        expect(gone).toBe(true);
        for (const id of writer.everPosted) ledger.add(id, { kind: "cascade", outcome: "unknown" });
      }

      // The feed, read as JSON pages from any instance: events 1..N, no gap, no repeat.
      // A change has a second to reach the feed (the accounts' deletions were answered just now):
      // the end of the feed is taken as such only when it is still the end a second later.
      const feed: CloudEvent[] = [];
      for (let after = 0, waited = false; ; ) {
        const page = await send(`${currentFleet.url()}/api/v1/posts/events?after=${after}&limit=1000`, {});
        expect(page?.status).toBe(200);
        const { events, next } = JSON.parse(page?.body ?? "{}") as { events: CloudEvent[]; next: number };
        if (events.length === 0) {
          if (waited) break;
          waited = true;
          await sleep(1000);
          continue;
        }
        waited = false;
        feed.push(...events);
        after = next;
      }
      const last = feed.length;
      expect(feed.map((event) => Number(event.id))).toEqual(Array.from({ length: last }, (_, i) => i + 1));

      // Every acknowledged change has exactly one event, and each post's events follow its writes.
      const byPost = new Map<number, CloudEvent[]>();
      for (const event of feed) {
        const id = Number(event.subject);
        byPost.set(id, [...(byPost.get(id) ?? []), event]);
      }
      const problems: string[] = [];
      for (const [id, attempts] of ledger.byPost)
        problems.push(...matchPost(id, attempts, byPost.get(id) ?? []));
      for (const [id, events] of byPost) {
        if (ledger.byPost.has(id)) continue;
        // A post whose creation was never answered: its creation, and its deletion with its author at most.
        const creation = ledger.unknownCreations.get(String(events[0]?.data.title));
        const attempts: Attempt[] =
          creation === undefined ? [] : [creation, { kind: "cascade", outcome: "unknown" }];
        problems.push(...matchPost(id, attempts, events));
      }
      expect(problems).toEqual([]);
      for (const events of byPost.values()) {
        // A post's versions only move forward, and a deletion is its last event.
        const stamps = events
          .filter((event) => event.type !== "post.deleted")
          .map((event) => String(event.data.updatedAt));
        expect([...stamps].sort()).toEqual(stamps);
        expect(events.findIndex((event) => event.type === "post.deleted")).toBeOneOf([-1, events.length - 1]);
      }
      for (const writer of writers.slice(0, LEAVING)) {
        for (const id of writer.everPosted) expect(byPost.get(id)?.at(-1)?.type).toBe("post.deleted");
      }

      // Every follower's stream, across all its reconnections, is one contiguous run up to N.
      // A quick run may end its writes before every follower was dropped a few times: they go on
      // being dropped and resuming until each has, so every stream is checked across reconnections.
      // A loop, not vi.waitFor: running out of time is judged by the checks below, stream by stream.
      const resumedBy = Date.now() + 30_000;
      while (followers.some(({ record }) => record.connections <= 3) && Date.now() < resumedBy)
        await sleep(100);
      await Promise.all(followers.map((follower) => follower.finish(last, 30_000)));
      for (const { record } of followers) {
        const first = record.ids[0] ?? 1;
        expect(record.ids).toEqual(Array.from({ length: last - first + 1 }, (_, i) => first + i));
        expect(record.resets).toEqual([]);
        expect(record.connections).toBeGreaterThan(3);
      }

      // The stream holds exactly events 1..N, once each, in order, as the feed serves them.
      // A loop, not vi.waitFor: a stream still short after 30 s is shown by the comparison below.
      const caughtUpFrom = Date.now();
      let stream = await readStream(nats.url);
      while (stream.length < last && Date.now() - caughtUpFrom < 30_000) {
        await sleep(200);
        stream = await readStream(nats.url);
      }
      const streamLagMs = Date.now() - caughtUpFrom;
      expect(stream.map((message) => Number(message.id))).toEqual(feed.map((event) => Number(event.id)));
      expect(stream.map((message) => message.sequence)).toEqual(feed.map((_, i) => i + 1));
      stream.forEach((message, i) => {
        const event = feed[i] as CloudEvent;
        expect(JSON.parse(message.body)).toEqual(event);
        expect(message.subject).toBe(SUBJECTS[event.type]);
      });

      console.info(
        `[chaos] ${ledger.writes} writes in ${writtenInMs} ms (${ledger.refused} refused, ${ledger.unknown} unanswered), ` +
          `${last} events; the stream had them all ${streamLagMs} ms after the feed was read; ` +
          `followers reconnected ${followers.map((f) => f.record.connections).join("/")} times; ${chaos.join("; ")}`,
      );
    }, 240_000);
  },
);
