import { postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it } from "vitest";
import { countPosts, insertUserWithToken, storedPost } from "./admin-sql.js";
import { createPost, idFromLocation, jsonRequest, type SignedUpUser, signUp } from "./api-client.js";
import { type InProcessService, startInProcessService } from "./in-process-service.js";
import { useSuiteDatabase } from "./postgres-suite.js";

/** A post as the API returns it. */
interface PostJson {
  readonly id: number;
  readonly title: string;
  readonly content: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

interface Page {
  readonly content: PostJson[];
  readonly size: number;
  readonly nextCursor: string | null;
}

describeNeeding(await postgresForTests(), "concurrent requests on PostgreSQL, through HTTP", () => {
  const database = useSuiteDatabase();
  let service: InProcessService;
  let writer: SignedUpUser;

  const api = (path: string, init?: RequestInit) => fetch(`${service.url}${path}`, init);

  beforeAll(async () => {
    service = await startInProcessService({ DATABASE_URL: database().connectionString });
    writer = await insertUserWithToken(database());
  });

  afterAll(async () => {
    await service?.close();
  });

  it("applies 50 title PATCHes and 50 content PATCHes of one post, racing, without losing any", async () => {
    const postId = await createPost(service.url, writer.token, "original title", "original content");
    const original = (await (await api(`/api/v1/posts/${postId}`)).json()) as PostJson;
    const patches = Array.from({ length: 100 }, (_, index) =>
      index % 2 === 0 ? { title: `title ${index}` } : { content: `content ${index}` },
    );

    const responses = await Promise.all(
      patches.map(async (change) => {
        const response = await api(`/api/v1/posts/${postId}`, jsonRequest("PATCH", change, writer.token));
        return { change, status: response.status, post: (await response.json()) as PostJson };
      }),
    );

    for (const { change, status, post } of responses) {
      expect(status).toBe(200);
      // Each PATCH answers the post with its own field applied.
      expect(post).toMatchObject({ id: postId, createdAt: original.createdAt, ...change });
      expect(post.updatedAt > post.createdAt).toBe(true);
    }
    // The row lock orders the PATCHes; each one's updatedAt is strictly later than the last.
    const byUpdatedAt = [...responses].sort((a, b) => a.post.updatedAt.localeCompare(b.post.updatedAt));
    expect(new Set(responses.map(({ post }) => post.updatedAt)).size).toBe(responses.length);
    // Replayed in that order, every answer is the previous state plus its own change: no PATCH
    // wrote back a field it had not been asked to change (no lost update).
    let state = { title: original.title, content: original.content };
    for (const { change, post } of byUpdatedAt) {
      state = { ...state, ...change };
      expect({ title: post.title, content: post.content }).toEqual(state);
    }
    const stored = await storedPost(database(), postId);
    expect(stored).toEqual(state);
    expect(patches.map((change) => change.title)).toContain(stored?.title);
    expect(patches.map((change) => change.content)).toContain(stored?.content);
  });

  it("registers one of 20 concurrent sign-ups of one email (in any case), and answers the others 409", async () => {
    const local = `race-${Date.now()}`;
    const spellings = Array.from({ length: 20 }, (_, index) =>
      index % 2 === 0 ? `${local}@example.com` : ` ${local.toUpperCase()}@Example.COM `,
    );
    const responses = await Promise.all(
      spellings.map(async (email) => {
        const response = await api("/api/v1/user", jsonRequest("POST", { email, password: "race password" }));
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      }),
    );

    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([201, ...Array.from({ length: 19 }, () => 409)]);
    for (const { status, body } of responses) {
      if (status === 409)
        expect(body).toMatchObject({ status: 409, error: "Conflict", path: "/api/v1/user" });
      else expect(body).toMatchObject({ email: `${local}@example.com` });
    }
    const users = await database()
      .db.selectFrom("users")
      .select("id")
      .where("email", "=", `${local}@example.com`)
      .execute();
    expect(users).toHaveLength(1);
  });

  it("creates 100 posts sent at once: 100 distinct ids, each readable with its own text", async () => {
    const before = await countPosts(database());
    const titles = Array.from({ length: 100 }, (_, index) => `concurrent ${index}`);
    const ids = await Promise.all(
      titles.map(async (title) => {
        const response = await api(
          "/api/v1/posts",
          jsonRequest("POST", { title, content: `${title} body` }, writer.token),
        );
        expect(response.status).toBe(201);
        return idFromLocation(response.headers.get("location"));
      }),
    );

    expect(new Set(ids).size).toBe(100);
    expect(await countPosts(database())).toBe(before + 100);
    const reads = await Promise.all(
      ids.map(async (id) => (await api(`/api/v1/posts/${id}`)).json() as Promise<PostJson>),
    );
    reads.forEach((post, index) => {
      expect(post).toMatchObject({ id: ids[index], title: titles[index], content: `${titles[index]} body` });
    });
  });

  it("walks every older post exactly once with keyset cursors while new posts keep arriving", async () => {
    // Another author's posts, so that the userId filter is exercised on a mixed table.
    const other = await signUp(service.url);
    for (let index = 0; index < 60; index++) {
      await database().posts.create({
        authorId: index % 3 === 0 ? other.id : writer.id,
        title: `old ${index}`,
        content: "old",
        createdAt: new Date(),
      });
    }
    const existing = async (userId?: number) => {
      let query = database().db.selectFrom("posts").select("id");
      if (userId !== undefined) query = query.where("user_id", "=", userId);
      return (await query.execute()).map((row) => row.id).sort((a, b) => b - a);
    };

    for (const filter of [undefined, writer.id]) {
      const before = await existing(filter);
      const newest = before[0] ?? 0;
      let creating = true;
      let created = 0;
      // A writer inserting as fast as it can for as long as the walk lasts.
      const writerLoop = (async () => {
        while (creating) {
          await createPost(service.url, writer.token, `new ${created}`);
          created++;
        }
      })();

      const walked: number[] = [];
      let next: string | null = `/api/v1/posts?size=7${filter === undefined ? "" : `&userId=${filter}`}`;
      while (next !== null) {
        const response = await api(next);
        expect(response.status).toBe(200);
        const page = (await response.json()) as Page;
        walked.push(...page.content.map((post) => post.id));
        const link = response.headers.get("link");
        next = page.nextCursor === null ? null : new URL(/^<([^>]+)>/.exec(link ?? "")?.[1] ?? "").search;
        if (next !== null) next = `/api/v1/posts${next}`;
      }
      creating = false;
      await writerLoop;

      // Newest first and never twice: ids strictly decrease along the walk.
      expect(walked).toEqual([...walked].sort((a, b) => b - a));
      expect(new Set(walked).size).toBe(walked.length);
      // Every post that existed when the walk began is visited; new ones only above them.
      expect(walked.filter((id) => id <= newest)).toEqual(before);
      expect(created).toBeGreaterThan(0);
    }
  });
});
