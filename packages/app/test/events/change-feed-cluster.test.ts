import { postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { expect, it } from "vitest";
import { signUpThrough, useCluster } from "../multi-instance/service-cluster.js";
import { idFromLocation, jsonRequest } from "../reliability/api-client.js";
import { type ArrivedEvent, readEventStream } from "../support/event-stream-reader.js";

const EVENTS = "/api/v1/posts/events";

interface CloudEvent {
  readonly id: string;
  readonly type: string;
  readonly subject: string;
  readonly data: { readonly id: number; readonly title?: string; readonly updatedAt?: string };
}

// docs/change-events.md#the-events: one sequence for the whole service, whatever instance made
// the change. Each instance hears of most numbers after its streams have read them (another
// instance numbered them, or a later read overtook the notification): a case that can leave an
// instance's streams asleep while its pages are right (the hub's own test pins it down).
describeNeeding(
  await postgresForTests(),
  "the change feed of three instances on one PostgreSQL database",
  () => {
    const cluster = useCluster({ size: 3 });

    it("every instance's stream and pages show 1..n with no gap, one event per acknowledged change, each post's in version order", async () => {
      const { instances, client } = cluster();
      const streams = await Promise.all(
        instances.map((instance) => readEventStream(`${instance.url}${EVENTS}?after=0`)),
      );
      try {
        const users = await Promise.all([1, 2, 3, 4].map(() => signUpThrough(client)));
        // What the clients were told: each acknowledged change, per post, in the order answered.
        const acknowledged = new Map<number, string[]>();
        const note = (id: number, what: string) =>
          acknowledged.set(id, [...(acknowledged.get(id) ?? []), what]);
        await Promise.all(
          users.map(async (user, u) => {
            const mine: number[] = [];
            for (let i = 0; i < 12; i++) {
              const { response } = await client.fetch(
                "/api/v1/posts",
                jsonRequest("POST", { title: `u${u}p${i}`, content: "c" }, user.token),
              );
              expect(response.status).toBe(201);
              const id = idFromLocation(response.headers.get("location"));
              mine.push(id);
              note(id, "post.created");
            }
            // Several writers on the same posts at once: each PATCH answered 200 is one event.
            await Promise.all(
              [0, 1, 2].map(async (writer) => {
                for (let i = 0; i < 10; i++) {
                  const id = mine[(i * 7 + writer) % 4] as number;
                  const { response } = await client.fetch(
                    `/api/v1/posts/${id}`,
                    jsonRequest("PATCH", { title: `w${writer}-${i}` }, user.token),
                  );
                  if (response.status === 200) note(id, "post.updated");
                  else expect(response.status).toBe(404);
                }
              }),
            );
            // A failing request makes no event.
            const refused = await client.fetch(
              `/api/v1/posts/${mine[0]}`,
              jsonRequest("PATCH", { title: "" }, user.token),
            );
            expect(refused.response.status).toBe(400);
            for (const id of mine.slice(8)) {
              const { response } = await client.fetch(`/api/v1/posts/${id}`, {
                method: "DELETE",
                headers: { "x-auth-token": user.token },
              });
              expect(response.status).toBe(204);
              note(id, "post.deleted");
            }
            if (u === 0) {
              // The account goes, and each of its remaining posts with it.
              const { response } = await client.fetch("/api/v1/user", {
                method: "DELETE",
                headers: { "x-auth-token": user.token },
              });
              expect(response.status).toBe(204);
              for (const id of mine.slice(0, 8)) note(id, "post.deleted");
            }
          }),
        );
        const total = [...acknowledged.values()].reduce((sum, list) => sum + list.length, 0);

        for (const stream of streams) await stream.until((events) => events.length >= total, 20_000);
        const expectedIds = Array.from({ length: total }, (_, i) => String(i + 1));
        for (const stream of streams) expect(stream.events.map((event) => event.id)).toEqual(expectedIds);
        // The three instances sent the same events, byte for byte.
        const texts = (events: ArrivedEvent[]) => events.map((event) => event.data);
        expect(texts(streams[1]?.events ?? [])).toEqual(texts(streams[0]?.events ?? []));
        expect(texts(streams[2]?.events ?? [])).toEqual(texts(streams[0]?.events ?? []));

        const events = (streams[0]?.events ?? []).map((event) => JSON.parse(event.data ?? "") as CloudEvent);
        const byPost = new Map<number, CloudEvent[]>();
        for (const event of events)
          byPost.set(Number(event.subject), [...(byPost.get(Number(event.subject)) ?? []), event]);
        for (const [id, told] of acknowledged) {
          const own = byPost.get(id) ?? [];
          // As many of each kind as were acknowledged: created first, deleted last.
          expect(own.map((event) => event.type).sort()).toEqual([...told].sort());
          expect(own[0]?.type).toBe("post.created");
          const deleted = own.findIndex((event) => event.type === "post.deleted");
          expect(deleted === -1 || deleted === own.length - 1).toBe(true);
          const versions = own.flatMap((event) =>
            event.data.updatedAt === undefined ? [] : [event.data.updatedAt],
          );
          expect(versions).toEqual([...versions].sort());
          expect(new Set(versions).size).toBe(versions.length);
        }

        // Each instance's JSON pages list the same events.
        for (const instance of instances) {
          let after = 0;
          const listed: string[] = [];
          for (;;) {
            const page = (await (await fetch(`${instance.url}${EVENTS}?after=${after}&limit=97`)).json()) as {
              events: CloudEvent[];
              next: number;
            };
            if (page.events.length === 0) break;
            listed.push(...page.events.map((event) => JSON.stringify(event)));
            after = page.next;
          }
          expect(listed).toEqual(texts(streams[0]?.events ?? []));
        }
      } finally {
        for (const stream of streams) stream.close();
      }
    });

    it("a change made on one instance reaches the streams of every instance within a second of its response", async () => {
      const { instances, client } = cluster();
      const streams = await Promise.all(
        instances.map((instance) => readEventStream(`${instance.url}${EVENTS}`)),
      );
      try {
        const user = await signUpThrough(client);
        for (let i = 0; i < 6; i++) {
          const { response } = await client.fetch(
            "/api/v1/posts",
            jsonRequest("POST", { title: `latency ${i}`, content: "c" }, user.token),
          );
          const answered = Date.now();
          expect(response.status).toBe(201);
          const id = String(idFromLocation(response.headers.get("location")));
          const arrived = (events: ArrivedEvent[]) =>
            events.find((event) => JSON.parse(event.data ?? "{}").subject === id)?.arrivedAt;
          for (const stream of streams) await stream.until((events) => arrived(events) !== undefined, 5000);
          for (const stream of streams)
            expect((arrived(stream.events) as number) - answered).toBeLessThan(1000);
        }
      } finally {
        for (const stream of streams) stream.close();
      }
    });
  },
);
