import { createPostgresDatabase, PostgresPostRepository } from "@posts/adapters-postgres";
import type { TestDatabase } from "@posts/adapters-postgres/testing";
import type { Post, PostUpdate, ReadPost, Result } from "@posts/domain";
import { sql } from "kysely";
import { beforeEach, describe, expect, it } from "vitest";
import { describeOnEachEngine, serverOnly, serverUrl, useTestDatabase } from "../use-test-database.js";
import { untilBlocked, whileLocked } from "../while-locked.js";

const CREATED_AT = new Date("2026-11-22T10:15:30.123Z");

async function anAuthor(database: TestDatabase, email = `writer-${Math.random()}@example.com`) {
  const created = await database.users.create({ email, passwordHash: "hash", createdAt: CREATED_AT });
  if (!created.ok) throw new Error(created.error);
  return created.value;
}

async function aPost(
  database: TestDatabase,
  authorId: number,
  text: { title?: string; content?: string } = {},
) {
  const post = await database.posts.create({
    authorId,
    title: text.title ?? "title",
    content: text.content ?? "content",
    createdAt: CREATED_AT,
  });
  if (post === undefined) throw new Error("author gone");
  return post;
}

const sqlStateOf = (promise: Promise<unknown>) =>
  promise.then(
    () => "no error",
    (error: { code?: string }) => error.code,
  );

/**
 * Starts `writes` one after the other, each once the ones before it wait for a lock, while
 * another transaction holds the row of user `userId` (which every write of a post or a key
 * must share), then lets them all go: creations that overlap for certain, in a known order.
 * Needs a PostgreSQL server.
 */
async function whileUserLocked<T>(
  database: TestDatabase,
  userId: number,
  writes: readonly (() => Promise<T>)[],
): Promise<PromiseSettledResult<T>[]> {
  const pending: Promise<PromiseSettledResult<T>[]>[] = [];
  await database.db.transaction().execute(async (trx) => {
    await sql`SELECT id FROM users WHERE id = ${userId} FOR UPDATE`.execute(trx);
    for (const [i, write] of writes.entries()) {
      pending.push(Promise.allSettled([write()]));
      await untilBlocked(database, i + 1);
    }
  });
  return (await Promise.all(pending)).flat();
}

describeOnEachEngine("PostgresPostRepository on %s", (engine) => {
  const database = useTestDatabase(engine);
  const onServer = serverOnly(engine);
  beforeEach(async () => database().truncate());

  it("loses no change when 20 partial updates of different fields run at once", async () => {
    const author = await anAuthor(database());
    const post = await aPost(database(), author.id, { title: "title 0", content: "content 0" });
    const updates: PostUpdate[] = Array.from({ length: 20 }, (_, i) => ({
      id: post.id,
      authorId: author.id,
      changes: i % 2 === 0 ? { title: `title ${i + 1}` } : { content: `content ${i + 1}` },
      // All in the same millisecond: updatedAt must still move on by one for each.
      now: CREATED_AT,
    }));
    const results = await Promise.all(updates.map((update) => database().posts.update(update)));

    const applied = results.map((result, i) => {
      if (!result.ok) throw new Error(`update ${i} failed: ${result.error}`);
      return { update: updates[i] as PostUpdate, post: result.value };
    });
    applied.sort((a, b) => a.post.updatedAt.getTime() - b.post.updatedAt.getTime());
    expect(applied.map(({ post }) => post.updatedAt.getTime() - CREATED_AT.getTime())).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    // Replayed one after the other in updatedAt order, each update must have seen every earlier
    // one: what it answered is the post with all of them applied.
    let expected: Post = post;
    for (const { update, post: answered } of applied) {
      expected = { ...expected, ...update.changes, updatedAt: answered.updatedAt };
      expect(answered).toStrictEqual(expected);
    }
    expect(await database().posts.findById(post.id)).toStrictEqual(expected);
  });

  it("stores a 255-emoji title and a 2 MiB content byte for byte", async () => {
    const author = await anAuthor(database());
    const title = "😀".repeat(255);
    const content = "가😀a\u0301\r\n\t\\'\"".repeat((2 * 1024 * 1024) / 16);
    const post = await aPost(database(), author.id, { title, content });
    // A content this large is read by id as an outline (its size); read whole, it is the same bytes.
    expect(await database().posts.findById(post.id)).toMatchObject({
      contentBytes: Buffer.byteLength(content),
    });
    const found = await database().posts.findWhole(post.id);
    expect(Buffer.from(found?.title ?? "").equals(Buffer.from(title))).toBe(true);
    expect(Buffer.from(found?.content ?? "").equals(Buffer.from(content))).toBe(true);
    // And the server holds those bytes, not a re-encoding that happens to decode back.
    const stored = await sql<{ title: number; content: number; md5: string }>`
      SELECT octet_length(title) AS title, octet_length(content) AS content, md5(content) AS md5
      FROM posts WHERE id = ${post.id}`.execute(database().db);
    const { createHash } = await import("node:crypto");
    expect(stored.rows[0]).toEqual({
      title: Buffer.byteLength(title),
      content: Buffer.byteLength(content),
      md5: createHash("md5").update(content).digest("hex"),
    });
  });

  it("lets the database refuse a 256-emoji title (22001) on create and on update, changing nothing", async () => {
    const author = await anAuthor(database());
    const tooLong = "😀".repeat(256);
    expect(
      await sqlStateOf(
        database().posts.create({ authorId: author.id, title: tooLong, content: "c", createdAt: CREATED_AT }),
      ),
    ).toBe("22001");
    expect(await database().posts.listPage({ limit: 10 })).toEqual([]);

    const post = await aPost(database(), author.id);
    expect(
      await sqlStateOf(
        database().posts.update({
          id: post.id,
          authorId: author.id,
          changes: { title: tooLong },
          now: CREATED_AT,
        }),
      ),
    ).toBe("22001");
    expect(await database().posts.findById(post.id)).toStrictEqual(post);
  });

  it("pages one author's posts by keyset among everyone's, newest first, without gaps or repeats", async () => {
    const a = await anAuthor(database());
    const b = await anAuthor(database());
    const mine: number[] = [];
    for (let i = 0; i < 25; i++) {
      mine.push((await aPost(database(), a.id)).id);
      await aPost(database(), b.id);
    }
    const pages: number[][] = [];
    let beforeId: number | undefined;
    for (;;) {
      const page = await database().posts.listPage({
        limit: 10,
        authorId: a.id,
        ...(beforeId ? { beforeId } : {}),
      });
      if (page.length === 0) break;
      expect(page.every((post) => post.author.id === a.id && post.author.email === a.email)).toBe(true);
      pages.push(page.map((post) => post.id));
      beforeId = page.at(-1)?.id;
    }
    expect(pages.map((page) => page.length)).toEqual([10, 10, 5]);
    expect(pages.flat()).toEqual([...mine].reverse());
  });

  onServer.it(
    "answers undefined when the author is deleted between reading and inserting (FK violation)",
    async () => {
      const author = await anAuthor(database());
      const created = await whileLocked(database(), sql`DELETE FROM users WHERE id = ${author.id}`, () =>
        database().posts.create({ authorId: author.id, title: "t", content: "c", createdAt: CREATED_AT }),
      );
      expect(created).toBeUndefined();
      expect(await database().posts.listPage({ limit: 10 })).toEqual([]);
    },
  );

  onServer.it(
    "answers not-found when the post is deleted while an update or a delete waits for it",
    async () => {
      const author = await anAuthor(database());
      const first = await aPost(database(), author.id);
      const updated: Result<ReadPost, string> = await whileLocked(
        database(),
        sql`DELETE FROM posts WHERE id = ${first.id}`,
        () =>
          database().posts.update({
            id: first.id,
            authorId: author.id,
            changes: { title: "x" },
            now: CREATED_AT,
          }),
      );
      expect(updated).toStrictEqual({ ok: false, error: "not-found" });

      const second = await aPost(database(), author.id);
      const deleted = await whileLocked(database(), sql`DELETE FROM posts WHERE id = ${second.id}`, () =>
        database().posts.delete({ id: second.id, authorId: author.id }),
      );
      expect(deleted).toStrictEqual({ ok: false, error: "not-found" });
    },
  );

  onServer.it(
    "sees the title a concurrent transaction committed while its content update waited",
    async () => {
      const author = await anAuthor(database());
      const post = await aPost(database(), author.id, { title: "old", content: "old" });
      const updated = await whileLocked(
        database(),
        sql`UPDATE posts SET title = 'committed meanwhile' WHERE id = ${post.id}`,
        () =>
          database().posts.update({
            id: post.id,
            authorId: author.id,
            changes: { content: "new" },
            now: CREATED_AT,
          }),
      );
      expect(updated.ok && { title: updated.value.title, content: updated.value.content }).toEqual({
        title: "committed meanwhile",
        content: "new",
      });
    },
  );

  onServer.describe("conditional writes under concurrency", () => {
    const conditionalTitle = (post: Post, expectedVersions: readonly Date[]) =>
      database().posts.update({
        id: post.id,
        authorId: post.author.id,
        changes: { title: "conditional" },
        now: CREATED_AT,
        expectedVersions,
      });

    it("an update waiting for a concurrent change of the version answers version-mismatch", async () => {
      const author = await anAuthor(database());
      const post = await aPost(database(), author.id);
      const moved = sql`UPDATE posts SET updated_at = updated_at + interval '1 millisecond' WHERE id = ${post.id}`;
      expect(
        await whileLocked(database(), moved, () => conditionalTitle(post, [post.updatedAt])),
      ).toStrictEqual({
        ok: false,
        error: "version-mismatch",
      });
      expect((await database().posts.findById(post.id))?.title).toBe(post.title);
    });

    it("a deletion waiting for a concurrent change of the version answers version-mismatch", async () => {
      const author = await anAuthor(database());
      const post = await aPost(database(), author.id);
      const moved = sql`UPDATE posts SET updated_at = updated_at + interval '1 millisecond' WHERE id = ${post.id}`;
      const deleted = await whileLocked(database(), moved, () =>
        database().posts.delete({ id: post.id, authorId: author.id, expectedVersions: [post.updatedAt] }),
      );
      expect(deleted).toStrictEqual({ ok: false, error: "version-mismatch" });
      expect(await database().posts.findById(post.id)).toBeDefined();
    });

    it("an update or a deletion waiting for a concurrent deletion answers not-found", async () => {
      const author = await anAuthor(database());
      const first = await aPost(database(), author.id);
      const gone = (post: Post) => sql`DELETE FROM posts WHERE id = ${post.id}`;
      expect(
        await whileLocked(database(), gone(first), () => conditionalTitle(first, [first.updatedAt])),
      ).toStrictEqual({ ok: false, error: "not-found" });
      const second = await aPost(database(), author.id);
      expect(
        await whileLocked(database(), gone(second), () =>
          database().posts.delete({
            id: second.id,
            authorId: author.id,
            expectedVersions: [second.updatedAt],
          }),
        ),
      ).toStrictEqual({ ok: false, error: "not-found" });
    });

    it("an update expecting the version a waited-for change rolled back from still happens", async () => {
      const author = await anAuthor(database());
      const post = await aPost(database(), author.id);
      const moved = sql`UPDATE posts SET updated_at = updated_at + interval '1 millisecond' WHERE id = ${post.id}`;
      const updated = await whileLocked(
        database(),
        moved,
        () => conditionalTitle(post, [post.updatedAt]),
        "rollback",
      );
      expect(updated.ok && updated.value.title).toBe("conditional");
    });
  });

  describe("idempotent creation under concurrency", () => {
    const create = (authorId: number, key: string, title = "title", createdAt = CREATED_AT) =>
      database().posts.createIdempotently(
        { authorId, title, content: "content", createdAt },
        { key, expiresAt: new Date(createdAt.getTime() + 60_000) },
      );
    const keyRows = async () =>
      (
        await sql<{ user_id: number; key: string; post_id: number }>`
          SELECT user_id, key, post_id FROM idempotency_keys ORDER BY user_id, key`.execute(database().db)
      ).rows;

    onServer.it("a creation that waits for a twin holding its key answers the twin's post", async () => {
      const author = await anAuthor(database());
      const results = await whileUserLocked(database(), author.id, [
        () => create(author.id, "twin"),
        () => create(author.id, "twin"),
      ]);
      const posts = await database().posts.listPage({ limit: 10 });
      expect(posts).toHaveLength(1);
      expect(results).toEqual([
        { status: "fulfilled", value: { ok: true, value: { id: posts[0]?.id, replayed: false } } },
        { status: "fulfilled", value: { ok: true, value: { id: posts[0]?.id, replayed: true } } },
      ]);
      expect(await keyRows()).toEqual([{ user_id: author.id, key: "twin", post_id: posts[0]?.id }]);
    });

    onServer.it("a creation that waits for a twin whose statement fails takes the key itself", async () => {
      const connectionString = serverUrl(database());
      // The twin gives up after 1.5 s: it claims the key (the second creation then waits on it)
      // and waits on the locked user, whose row its foreign keys check when its statement ends.
      const twinDatabase = createPostgresDatabase({
        connectionString,
        poolSize: 1,
        statementTimeoutMillis: 1500,
      });
      try {
        const author = await anAuthor(database());
        const twin = new PostgresPostRepository(twinDatabase.db);
        const results = await database()
          .db.transaction()
          .execute(async (trx) => {
            await sql`SELECT id FROM users WHERE id = ${author.id} FOR UPDATE`.execute(trx);
            const first = Promise.allSettled([
              twin.createIdempotently(
                { authorId: author.id, title: "title", content: "content", createdAt: CREATED_AT },
                { key: "twin", expiresAt: new Date(CREATED_AT.getTime() + 60_000) },
              ),
            ]);
            await untilBlocked(database(), 1);
            const second = Promise.allSettled([create(author.id, "twin")]);
            await untilBlocked(database(), 2);
            // The user stays locked until the twin has failed: the second creation then waits on it.
            return [...(await first), second] as const;
          });
        expect(results[0]).toMatchObject({ status: "rejected", reason: { code: "57014" } });
        const [second] = await results[1];
        const posts = await database().posts.listPage({ limit: 10 });
        expect(posts.map((post) => post.title)).toEqual(["title"]);
        expect(second).toEqual({
          status: "fulfilled",
          value: { ok: true, value: { id: posts[0]?.id, replayed: false } },
        });
        expect(await keyRows()).toEqual([{ user_id: author.id, key: "twin", post_id: posts[0]?.id }]);
      } finally {
        await twinDatabase.close();
      }
    });

    onServer.it(
      "answers author-gone, storing nothing, when the author is deleted while the claim waits",
      async () => {
        const author = await anAuthor(database());
        const created = await whileLocked(database(), sql`DELETE FROM users WHERE id = ${author.id}`, () =>
          create(author.id, "orphan"),
        );
        expect(created).toStrictEqual({ ok: false, error: "author-gone" });
        expect(await database().posts.listPage({ limit: 10 })).toEqual([]);
        expect(await keyRows()).toEqual([]);
      },
    );

    onServer.it(
      "creations with one key through several pools (instances) at once store one post",
      async () => {
        const connectionString = serverUrl(database());
        const instances = [1, 2, 3].map(() => createPostgresDatabase({ connectionString, poolSize: 5 }));
        try {
          const author = await anAuthor(database());
          const repositories = instances.map((instance) => new PostgresPostRepository(instance.db));
          const results = await Promise.all(
            Array.from({ length: 21 }, (_, i) =>
              (repositories[i % repositories.length] as PostgresPostRepository).createIdempotently(
                { authorId: author.id, title: "t", content: "c", createdAt: CREATED_AT },
                { key: "shared", expiresAt: new Date(CREATED_AT.getTime() + 60_000) },
              ),
            ),
          );
          const posts = await database().posts.listPage({ limit: 10 });
          expect(posts).toHaveLength(1);
          expect(results.filter((result) => result.ok && !result.value.replayed)).toHaveLength(1);
          expect(results.every((result) => result.ok && result.value.id === posts[0]?.id)).toBe(true);
        } finally {
          await Promise.all(instances.map((instance) => instance.close()));
        }
      },
    );

    it("an expired key taken over by several creations at once makes one new post", async () => {
      const author = await anAuthor(database());
      const first = await create(author.id, "expiring");
      const later = new Date(CREATED_AT.getTime() + 60_000);
      const results = await Promise.all(
        Array.from({ length: 10 }, () => create(author.id, "expiring", "title", later)),
      );
      const posts = await database().posts.listPage({ limit: 10 });
      expect(posts).toHaveLength(2);
      const second = posts[0]?.id;
      expect(second).not.toBe(first.ok ? first.value.id : undefined);
      expect(results.filter((result) => result.ok && !result.value.replayed)).toHaveLength(1);
      expect(results.every((result) => result.ok && result.value.id === second)).toBe(true);
      expect(await keyRows()).toEqual([{ user_id: author.id, key: "expiring", post_id: second }]);
    });
  });

  it("sweeps more expired keys than one batch holds, and only those", async () => {
    const author = await anAuthor(database());
    await sql`
      INSERT INTO idempotency_keys (user_id, key, post_id, expires_at)
      SELECT ${author.id}, 'k' || g, g, ${CREATED_AT.toISOString()}::timestamptz - g * interval '1 second'
      FROM generate_series(0, 12344) AS g`.execute(database().db);
    await sql`
      INSERT INTO idempotency_keys (user_id, key, post_id, expires_at)
      VALUES (${author.id}, 'fresh', 1, ${CREATED_AT.toISOString()}::timestamptz + interval '1 millisecond')`.execute(
      database().db,
    );
    expect(await database().posts.deleteExpiredIdempotencyKeys(CREATED_AT)).toBe(12_345);
    const left = await sql<{ key: string }>`SELECT key FROM idempotency_keys`.execute(database().db);
    expect(left.rows).toEqual([{ key: "fresh" }]);
  });

  it("replays a key whose fingerprint PostgreSQL computed, as earlier versions stored them", async () => {
    // A key whose fingerprint SQL computed over the same bytes must answer as one hashed in Node.
    const author = await anAuthor(database());
    const texts = [
      { key: "korean", title: "제목 🎉", content: "본문은 길다 ✨" },
      { key: "split-ab", title: "ab", content: "c" },
      { key: "split-a", title: "a", content: "bc" },
    ];
    for (const [index, text] of texts.entries()) {
      await sql`
        INSERT INTO idempotency_keys (user_id, key, post_id, expires_at, fingerprint)
        VALUES (${author.id}, ${text.key}, ${index + 1}, ${CREATED_AT.toISOString()}::timestamptz + interval '1 hour',
          sha256(int4send(octet_length(convert_to(${text.title}::text, 'UTF8'))) || convert_to(${text.title}::text, 'UTF8')
                 || convert_to(${text.content}::text, 'UTF8')))`.execute(database().db);
    }
    const again = (key: string, title: string, content: string) =>
      database().posts.createIdempotently(
        { authorId: author.id, title, content, createdAt: CREATED_AT },
        { key, expiresAt: new Date(CREATED_AT.getTime() + 60_000) },
      );
    for (const [index, text] of texts.entries()) {
      expect(await again(text.key, text.title, text.content)).toEqual({
        ok: true,
        value: { id: index + 1, replayed: true },
      });
    }
    // The title's length is part of what is hashed: moving a character across the boundary is other text.
    expect(await again("split-ab", "a", "bc")).toEqual({ ok: false, error: "key-reused" });
    expect(await again("korean", "제목 🎉", "본문은 길다")).toEqual({ ok: false, error: "key-reused" });
  });
});
