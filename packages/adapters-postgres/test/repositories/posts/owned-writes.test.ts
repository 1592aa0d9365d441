import { PostgresPostRepository } from "@posts/adapters-postgres";
import type { Post, PostUpdate } from "@posts/domain";
import { sql } from "kysely";
import { beforeEach, expect, it } from "vitest";
import { describeOnEachEngine, serverOnly, useTestDatabase } from "../../use-test-database.js";
import { whileLocked } from "../../while-locked.js";

const CREATED_AT = new Date("2026-11-27T10:15:30.123Z");
const LATER = new Date(CREATED_AT.getTime() + 60_000);

// Updates asked for in one turn of the event loop share a statement (owned-writes.ts); each must
// be answered exactly as it would be alone.
describeOnEachEngine("updates of posts in one statement on %s", (engine) => {
  const database = useTestDatabase(engine);
  const onServer = serverOnly(engine);
  beforeEach(async () => database().truncate());
  let authors = 0;

  async function anAuthor() {
    const created = await database().users.create({
      email: `batches-${engine}-${++authors}@example.com`,
      passwordHash: "hash",
      createdAt: CREATED_AT,
    });
    if (!created.ok) throw new Error(created.error);
    return created.value;
  }
  async function aPost(authorId: number, title = "title"): Promise<Post> {
    const post = await database().posts.create({
      authorId,
      title,
      content: "content",
      createdAt: CREATED_AT,
    });
    if (post === undefined) throw new Error("author gone");
    return post;
  }
  /** How many transactions last wrote these posts: one when one statement updated them all. */
  async function writers(ids: readonly number[]): Promise<number> {
    const { rows } = await sql<{ writers: number }>`
      SELECT count(DISTINCT xmin::text)::int AS writers FROM posts WHERE id = ANY(${ids}::int8[])`.execute(
      database().db,
    );
    return rows[0]?.writers ?? 0;
  }
  const titled = (post: Post, title: string, more: Partial<PostUpdate> = {}): PostUpdate => ({
    id: post.id,
    authorId: post.author.id,
    changes: { title },
    now: LATER,
    ...more,
  });

  it("answers each update of one statement as it would be answered alone", async () => {
    const author = await anAuthor();
    const other = await anAuthor();
    const [p1, p2, p3, p4] = [
      await aPost(author.id),
      await aPost(author.id),
      await aPost(author.id),
      await aPost(author.id),
    ];
    const theirs = await aPost(other.id);
    if (p1 === undefined || p2 === undefined || p3 === undefined || p4 === undefined)
      throw new Error("no posts");
    const wrongVersion = new Date(CREATED_AT.getTime() - 5);

    const answers = await Promise.all([
      database().posts.update(titled(p1, "unconditional")),
      database().posts.update({
        ...titled(p2, ""),
        changes: { content: "new content" },
        expectedVersions: [p2.updatedAt],
      }),
      database().posts.update(titled(p3, "stale", { expectedVersions: [wrongVersion] })),
      database().posts.update(titled(theirs, "not mine", { authorId: author.id })),
      database().posts.update(titled(p4, "", { id: p4.id + 1000 })),
      database().posts.update(titled(p4, "one of two", { expectedVersions: [wrongVersion, p4.updatedAt] })),
    ]);

    expect(answers.map((answer) => (answer.ok ? "ok" : answer.error))).toEqual([
      "ok",
      "ok",
      "version-mismatch",
      "not-author",
      "not-found",
      "ok",
    ]);
    const [a1, a2, , , , a6] = answers.map((answer) => (answer.ok ? answer.value : undefined));
    expect(a1).toStrictEqual({ ...p1, title: "unconditional", updatedAt: LATER });
    expect(a2).toStrictEqual({ ...p2, content: "new content", updatedAt: LATER });
    expect(a6).toStrictEqual({ ...p4, title: "one of two", updatedAt: LATER });
    for (const post of [a1, a2, a6])
      expect(await database().posts.findById(post?.id as number)).toStrictEqual(post);
    // The refused ones changed nothing.
    expect(await database().posts.findById(p3.id)).toStrictEqual(p3);
    expect(await database().posts.findById(theirs.id)).toStrictEqual(theirs);
    expect(await writers([p1.id, p2.id, p4.id])).toBe(1);
    const events = await sql<{ count: number }>`
      SELECT count(*)::int AS count FROM post_events WHERE type = 'post.updated'`.execute(database().db);
    expect(events.rows).toEqual([{ count: 3 }]);
  });

  it("sends a later update of the same post after the statement, so that each sees the one before", async () => {
    const author = await anAuthor();
    const post = await aPost(author.id);
    const beside = await aPost(author.id);
    const answers = await Promise.all([
      database().posts.update(titled(post, "first", { now: CREATED_AT })),
      database().posts.update(titled(beside, "beside", { now: CREATED_AT })),
      database().posts.update(titled(post, "second", { now: CREATED_AT })),
      // Both expect the version the post had: only the first of them may find it.
      database().posts.update(
        titled(beside, "expects the first version", { expectedVersions: [beside.updatedAt] }),
      ),
    ]);
    expect(answers.map((answer) => (answer.ok ? answer.value.title : answer.error))).toEqual([
      "first",
      "beside",
      "second",
      "version-mismatch",
    ]);
    const second = answers[2];
    expect(second?.ok && second.value.updatedAt.getTime() - CREATED_AT.getTime()).toBe(2);
    expect((await database().posts.findById(post.id))?.title).toBe("second");
  });

  it("tries each update alone when their statement fails for one of them, so that only that one fails", async () => {
    const author = await anAuthor();
    const [p1, p2] = [await aPost(author.id), await aPost(author.id)];
    if (p1 === undefined || p2 === undefined) throw new Error("no posts");
    // Longer than the column allows: what the domain never sends, a stand-in for any row PostgreSQL refuses.
    const answers = await Promise.allSettled([
      database().posts.update(titled(p1, "x".repeat(300))),
      database().posts.update(titled(p2, "fine")),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual(["rejected", "fulfilled"]);
    expect((await database().posts.findById(p1.id))?.title).toBe("title");
    expect((await database().posts.findById(p2.id))?.title).toBe("fine");
  });

  onServer.describe("waiting for a concurrent write", () => {
    it("answers version-mismatch, not-found or the change, as alone, beside an update that did not wait", async () => {
      const author = await anAuthor();
      // The contended post's conditional update and another post's update, in one statement,
      // while another transaction holds `lock` on the contended one and then ends as `then` says.
      const both = async (lock: (contended: Post) => ReturnType<typeof sql>, then: "commit" | "rollback") => {
        const contended = await aPost(author.id);
        const free = await aPost(author.id);
        const answers = await whileLocked(
          database(),
          lock(contended),
          () =>
            Promise.all([
              database().posts.update(
                titled(contended, "conditional", { expectedVersions: [contended.updatedAt] }),
              ),
              database().posts.update(titled(free, "free")),
            ]),
          then,
        );
        return answers.map((answer) => (answer.ok ? answer.value.title : answer.error));
      };
      const moveVersion = (post: Post) =>
        sql`UPDATE posts SET updated_at = updated_at + interval '1 millisecond' WHERE id = ${post.id}`;
      const remove = (post: Post) => sql`DELETE FROM posts WHERE id = ${post.id}`;
      expect(await both(moveVersion, "commit")).toEqual(["version-mismatch", "free"]);
      expect(await both(remove, "commit")).toEqual(["not-found", "free"]);
      expect(await both(moveVersion, "rollback")).toEqual(["conditional", "free"]);
      const beside = await aPost(author.id);
      const titledMeanwhile = await aPost(author.id);
      const meanwhile = await whileLocked(
        database(),
        sql`UPDATE posts SET title = 'committed meanwhile' WHERE id = ${titledMeanwhile.id}`,
        () =>
          Promise.all([
            database().posts.update({ ...titled(titledMeanwhile, ""), changes: { content: "new" } }),
            database().posts.update(titled(beside, "other")),
          ]),
      );
      expect(meanwhile.map((answer) => answer.ok && [answer.value.title, answer.value.content])).toEqual([
        ["committed meanwhile", "new"],
        ["other", "content"],
      ]);
    });

    it("lets statements of two processes update the same posts in opposite orders without a deadlock", async () => {
      const author = await anAuthor();
      const posts = await Promise.all(Array.from({ length: 6 }, () => aPost(author.id)));
      // As many posts as make the planner visit a statement's posts in the order asked (an
      // index probe each), not in the table's order, which both statements would share.
      await sql`
        INSERT INTO posts (title, content, created_at, updated_at, user_id)
        SELECT 'filler', 'filler', now(), now(), ${author.id} FROM generate_series(1, 20000)`.execute(
        database().db,
      );
      await sql`ANALYZE posts`.execute(database().db);
      // Two repositories: two instances' statements, each on its own connection.
      const here = new PostgresPostRepository(database().db);
      const there = new PostgresPostRepository(database().db);
      const started = performance.now();
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all([
          ...posts.map((post) => here.update(titled(post, `here ${round}`))),
          ...[...posts].reverse().map((post) => there.update(titled(post, `there ${round}`))),
        ]);
        expect(answers.every((answer) => answer.ok)).toBe(true);
      }
      // A deadlock is found only after deadlock_timeout (1 s by default), then the statements
      // are tried again alone: ten rounds with one would take more than ten seconds.
      expect(performance.now() - started).toBeLessThan(5000);
      const deadlocks = await sql<{ deadlocks: number }>`
        SELECT pg_stat_force_next_flush(), deadlocks::int FROM pg_stat_database WHERE datname = current_database()`.execute(
        database().db,
      );
      expect(deadlocks.rows[0]?.deadlocks).toBe(0);
    });
  });
});
