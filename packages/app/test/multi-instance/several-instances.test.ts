import { setTimeout as sleep } from "node:timers/promises";
import { postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { expect, it } from "vitest";
import { idFromLocation, jsonRequest } from "../reliability/api-client.js";
import { signUpThrough, useCluster } from "./service-cluster.js";

const LOGIN_THROTTLE_MAX = 3;

interface PostJson {
  readonly id: number;
  readonly title: string;
  readonly content: string;
}

// docs/operations.md#several-instances: nothing a client observes depends on which instance
// answers.
describeNeeding(
  await postgresForTests(),
  "three instances on one PostgreSQL database, behind a round-robin balancer",
  () => {
    const cluster = useCluster({ size: 3, env: { LOGIN_THROTTLE_MAX: String(LOGIN_THROTTLE_MAX) } });
    const client = () => cluster().client;
    const postPath = (id: number) => `/api/v1/posts/${id}`;

    it("come up together on an empty schema, which exactly one of them migrated", async () => {
      const { instances, database } = cluster();
      expect(instances).toHaveLength(3);
      const migrated = instances.flatMap((instance) =>
        instance.logs.filter((line) => Array.isArray(line.applied)).map((line) => line.applied as string[]),
      );
      expect(migrated).toHaveLength(1);
      const upToDate = instances.filter((instance) =>
        instance.logs.some((line) => line.msg === "database schema is up to date"),
      );
      expect(upToDate).toHaveLength(2);

      const recorded = await database.db
        .withTables<{ kysely_migration: { name: string } }>()
        .selectFrom("kysely_migration")
        .select("name")
        .orderBy("name")
        .execute();
      const names = recorded.map((row) => row.name);
      expect(names).toEqual(migrated[0]);
      expect(names).toContain("0003_create_attempt_counts");
    });

    it("register on one, log in on another, create on a third: the post and the account read the same on each", async () => {
      const user = await signUpThrough(client());
      const created = await client().fetch(
        "/api/v1/posts",
        jsonRequest("POST", { title: "여러 인스턴스", content: "본문" }, user.token),
      );
      expect(created.response.status).toBe(201);
      expect(new Set([...user.answeredBy, created.instance]).size).toBe(3);

      const id = idFromLocation(created.response.headers.get("location"));
      const reads = await Promise.all(
        [0, 1, 2].map(async (instance) => {
          const post = await client().fetchOn(instance, postPath(id));
          const me = await client().fetchOn(instance, "/api/v1/user", {
            headers: { "x-auth-token": user.token },
          });
          return {
            post: [post.response.status, await post.response.json()],
            me: [me.response.status, await me.response.json()],
          };
        }),
      );
      expect(reads[0]?.post).toEqual([
        200,
        expect.objectContaining({ id, title: "여러 인스턴스", user: { id: user.id, email: user.email } }),
      ]);
      expect(reads[0]?.me).toEqual([200, expect.objectContaining({ id: user.id, email: user.email })]);
      expect(reads[1]).toEqual(reads[0]);
      expect(reads[2]).toEqual(reads[0]);
    });

    it("continues a cursor from one instance on the others, visiting every post once", async () => {
      const user = await signUpThrough(client());
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) {
        const created = await client().fetch(
          "/api/v1/posts",
          jsonRequest("POST", { title: `page ${i}`, content: "본문" }, user.token),
        );
        ids.push(idFromLocation(created.response.headers.get("location")));
      }

      const seen: number[] = [];
      const answeredBy: number[] = [];
      let query = `?size=2&userId=${user.id}`;
      for (;;) {
        const page = await client().fetch(`/api/v1/posts${query}`);
        expect(page.response.status).toBe(200);
        const body = (await page.response.json()) as { content: PostJson[]; nextCursor: string | null };
        seen.push(...body.content.map((post) => post.id));
        answeredBy.push(page.instance);
        if (body.nextCursor === null) break;
        query = `?size=2&userId=${user.id}&cursor=${encodeURIComponent(body.nextCursor)}`;
      }
      expect(seen).toEqual([...ids].reverse());
      expect(new Set(answeredBy).size).toBe(3);
    });

    it("throttles login failures spread over the instances at the limit of one instance", async () => {
      const user = await signUpThrough(client());
      const attempt = (password: string) =>
        client().fetch("/api/v1/user/login", jsonRequest("POST", { email: user.email, password }));

      const failures = [];
      for (let i = 0; i < LOGIN_THROTTLE_MAX; i++) failures.push(await attempt("wrong password"));
      expect(failures.map((failure) => failure.response.status)).toEqual([401, 401, 401]);
      expect(new Set(failures.map((failure) => failure.instance)).size).toBe(3);

      // Even the right password, on every instance: the count is the database's, not each one's.
      const refusals = [];
      for (let i = 0; i < 3; i++) refusals.push(await attempt(user.password));
      for (const refusal of refusals) {
        expect(refusal.response.status).toBe(429);
        expect(Number(refusal.response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      }
      expect(new Set(refusals.map((refusal) => refusal.instance)).size).toBe(3);
    });

    it("loses no field when PATCHes of different fields arrive at different instances at once", async () => {
      const user = await signUpThrough(client());
      const created = await client().fetch(
        "/api/v1/posts",
        jsonRequest("POST", { title: "t", content: "c" }, user.token),
      );
      const path = postPath(idFromLocation(created.response.headers.get("location")));

      for (let round = 0; round < 10; round++) {
        const [first, second] = await Promise.all([
          client().fetch(path, jsonRequest("PATCH", { title: `title ${round}` }, user.token)),
          client().fetch(path, jsonRequest("PATCH", { content: `content ${round}` }, user.token)),
        ]);
        expect([first?.response.status, second?.response.status]).toEqual([200, 200]);
        expect(first?.instance).not.toBe(second?.instance);
        const stored = (await (await client().fetch(path)).response.json()) as PostJson;
        expect({ title: stored.title, content: stored.content }).toEqual({
          title: `title ${round}`,
          content: `content ${round}`,
        });
      }
    });

    /** The same request sent at once to every instance. */
    const onEveryInstance = (path: string, init: (instance: number) => RequestInit) =>
      Promise.all(cluster().instances.map((_, instance) => client().fetchOn(instance, path, init(instance))));
    const withHeaders = (init: RequestInit, headers: Record<string, string>): RequestInit => ({
      ...init,
      headers: { ...(init.headers as Record<string, string>), ...headers },
    });
    const createPost = async (token: string) => {
      const created = await client().fetch(
        "/api/v1/posts",
        jsonRequest("POST", { title: "t", content: "c" }, token),
      );
      expect(created.response.status).toBe(201);
      return postPath(idFromLocation(created.response.headers.get("location")));
    };

    it("creates one post for one Idempotency-Key sent at once to every instance, and all answer its Location", async () => {
      const user = await signUpThrough(client());
      const body = { title: "once", content: "only once" };
      for (let round = 0; round < 5; round++) {
        const key = `cluster-key-${round}-${user.id}`;
        const answers = await onEveryInstance("/api/v1/posts", () =>
          withHeaders(jsonRequest("POST", body, user.token), { "idempotency-key": key }),
        );

        expect(answers.map(({ response }) => response.status)).toEqual([201, 201, 201]);
        // Each instance names itself in the absolute Location (behind a balancer they share a host): one post.
        const ids = new Set(answers.map(({ response }) => idFromLocation(response.headers.get("location"))));
        expect(ids.size).toBe(1);
        expect(
          answers.filter(({ response }) => response.headers.get("idempotent-replayed") === "true"),
        ).toHaveLength(2);
      }
      const page = await client().fetch(`/api/v1/posts?userId=${user.id}&size=100`);
      expect(((await page.response.json()) as { content: unknown[] }).content).toHaveLength(5);
    });

    it("lets exactly one PATCH and one DELETE through when the same If-Match tag reaches every instance at once", async () => {
      const user = await signUpThrough(client());
      for (let round = 0; round < 5; round++) {
        const path = await createPost(user.token);
        const tag = (await client().fetch(path)).response.headers.get("etag") ?? "";
        const patches = await onEveryInstance(path, (instance) =>
          withHeaders(jsonRequest("PATCH", { title: `by instance ${instance}` }, user.token), {
            "if-match": tag,
          }),
        );
        expect(patches.map(({ response }) => response.status).sort()).toEqual([200, 412, 412]);
        const winner = patches.find(({ response }) => response.status === 200);
        const stored = (await (await client().fetch(path)).response.json()) as PostJson;
        expect(stored.title).toBe(`by instance ${winner?.instance}`);

        const current = winner?.response.headers.get("etag") ?? "";
        const deletions = await onEveryInstance(path, () => ({
          method: "DELETE",
          headers: { "x-auth-token": user.token, "if-match": current },
        }));
        expect(deletions.map(({ response }) => response.status).sort()).toEqual([204, 412, 412]);
        expect((await client().fetch(path)).response.status).toBe(404);
      }
    });

    it("revalidates on every instance an entity tag that another instance gave", async () => {
      const user = await signUpThrough(client());
      const path = await createPost(user.token);
      const first = await client().fetch(path);
      const tag = first.response.headers.get("etag") ?? "";
      expect(tag).toMatch(/^"[^"]+"$/);
      const page = await client().fetch(`/api/v1/posts?userId=${user.id}`);
      const pageTag = page.response.headers.get("etag") ?? "";
      expect(pageTag).toMatch(/^W\/"[^"]+"$/);

      const revalidations = await onEveryInstance(path, () => ({ headers: { "if-none-match": tag } }));
      expect(revalidations.map(({ response }) => response.status)).toEqual([304, 304, 304]);
      expect(revalidations.map(({ response }) => response.headers.get("etag"))).toEqual([tag, tag, tag]);
      const pages = await onEveryInstance(`/api/v1/posts?userId=${user.id}`, () => ({
        headers: { "if-none-match": pageTag },
      }));
      expect(pages.map(({ response }) => response.status)).toEqual([304, 304, 304]);

      // A change made through one instance is seen by the others: the old tag no longer revalidates.
      await client().fetch(path, jsonRequest("PATCH", { content: "changed" }, user.token));
      const after = await onEveryInstance(path, () => ({ headers: { "if-none-match": tag } }));
      expect(after.map(({ response }) => response.status)).toEqual([200, 200, 200]);
      expect(new Set(after.map(({ response }) => response.headers.get("etag"))).size).toBe(1);
    });

    // Last: it stops an instance.
    it("SIGTERM to one instance under a steady stream of POSTs: no acknowledged write is lost, the others keep answering", async () => {
      const { instances, database } = cluster();
      const user = await signUpThrough(client());
      const victim = 2;
      interface Outcome {
        readonly instance: number;
        readonly title: string;
        readonly status: number;
        readonly location: string | null;
        readonly afterExit: boolean;
      }
      const outcomes: Outcome[] = [];
      let exited = false;
      let streaming = true;
      const stream = async (worker: number) => {
        for (let i = 0; streaming; i++) {
          const title = `load ${worker}-${i}`;
          const instance = client().take();
          const afterExit = exited;
          try {
            const { response } = await client().fetchOn(
              instance,
              "/api/v1/posts",
              jsonRequest("POST", { title, content: "under load" }, user.token),
            );
            await response.arrayBuffer();
            outcomes.push({
              instance,
              title,
              status: response.status,
              location: response.headers.get("location"),
              afterExit,
            });
          } catch {
            // Refused or cut connection: the client never had an answer, so nothing was acknowledged.
            outcomes.push({ instance, title, status: 0, location: null, afterExit });
          }
        }
      };
      const workers = Array.from({ length: 6 }, (_, worker) => stream(worker));

      await sleep(500);
      const exit = await instances[victim]?.stop();
      exited = true;
      await sleep(500);
      streaming = false;
      await Promise.all(workers);

      expect(exit?.code, instances[victim]?.output()).toBe(0);
      const survivors = outcomes.filter((outcome) => outcome.instance !== victim);
      expect(survivors.filter((outcome) => outcome.status !== 201)).toEqual([]);
      expect(survivors.filter((outcome) => outcome.afterExit).length).toBeGreaterThan(10);
      const atVictim = outcomes.filter((outcome) => outcome.instance === victim);
      expect(atVictim.filter((outcome) => outcome.status === 201).length).toBeGreaterThan(0);
      expect(atVictim.filter((outcome) => ![201, 503, 0].includes(outcome.status))).toEqual([]);

      // Every acknowledged post reads back through the instances still running, by its Location's path.
      const acknowledged = outcomes.filter((outcome) => outcome.status === 201);
      for (const outcome of acknowledged) {
        const id = idFromLocation(outcome.location);
        const instance = outcome.instance === 0 ? 1 : 0;
        const read = await client().fetchOn(instance, postPath(id));
        expect(read.response.status, outcome.title).toBe(200);
        expect(((await read.response.json()) as PostJson).title).toBe(outcome.title);
      }
      // And nothing was stored that was never sent.
      const stored = await database.db
        .selectFrom("posts")
        .select("title")
        .where("user_id", "=", user.id)
        .execute();
      const sent = new Set(outcomes.map((outcome) => outcome.title));
      expect(stored.filter((row) => !sent.has(row.title))).toEqual([]);
      expect(stored.length).toBeGreaterThanOrEqual(acknowledged.length);
    });
  },
);
