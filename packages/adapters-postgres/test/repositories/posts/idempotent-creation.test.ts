import { createPostgresDatabase, PostgresPostRepository } from "@posts/adapters-postgres";
import type { NewPost } from "@posts/domain";
import { sql } from "kysely";
import { expect, it } from "vitest";
import { describeOnEachEngine, serverOnly, serverUrl, useTestDatabase } from "../../use-test-database.js";
import { CREATED_AT, creations } from "./creations.js";

// Creations with an idempotency key go in one statement too (idempotent-creation.ts); each
// must be answered exactly as it would be alone, a replay as a replay.
describeOnEachEngine("creations of posts with idempotency keys in one statement on %s", (engine) => {
  const database = useTestDatabase(engine);
  const onServer = serverOnly(engine);
  const { setUp, writers, postsOf, eventsOf } = creations(database, engine);

  const expiresAt = new Date(CREATED_AT.getTime() + 86_400_000);
  const keyed = (posts: PostgresPostRepository, post: NewPost, key: string) =>
    posts.createIdempotently(post, { key, expiresAt });
  async function keysOf(userId: number): Promise<Record<string, number>> {
    const { rows } = await sql<{ key: string; post_id: string }>`
      SELECT key, post_id FROM idempotency_keys WHERE user_id = ${userId}`.execute(database().db);
    return Object.fromEntries(rows.map((row) => [row.key, Number(row.post_id)]));
  }

  it("creates the keyed creations asked for in one turn with one statement, each under its own key", async () => {
    const { posts, asked, author } = await setUp();
    const created = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => keyed(posts, asked(i), `key ${i}`)));
    expect(created.every((answer) => answer.ok && !answer.value.replayed)).toBe(true);
    const ids = created.map((answer) => (answer.ok ? answer.value.id : 0));

    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(6);
    expect(await writers(ids)).toBe(1);
    expect(await eventsOf(ids)).toBe(6);
    expect(await keysOf(author.id)).toEqual(Object.fromEntries(ids.map((id, i) => [`key ${i}`, id])));
    for (const [i, id] of ids.entries()) {
      const post = await posts.findById(id);
      expect([post?.title, post?.content, post?.createdAt]).toEqual([
        asked(i).title,
        asked(i).content,
        asked(i).createdAt,
      ]);
    }
    // Each key remembers its own text: the same text replays, another is refused.
    const again = await Promise.all([
      keyed(posts, asked(0), "key 0"),
      keyed(posts, asked(1, { title: "another" }), "key 1"),
    ]);
    expect(again).toEqual([
      { ok: true, value: { id: ids[0], replayed: true } },
      { ok: false, error: "key-reused" },
    ]);
  });

  it("replays a key used before, and creates the others asked with it, each once", async () => {
    const { posts, asked, author } = await setUp();
    const first = await keyed(posts, asked(0), "used");
    const answers = await Promise.all([
      keyed(posts, asked(1), "new one"),
      keyed(posts, asked(0), "used"),
      keyed(posts, asked(2), "new two"),
    ]);
    expect(answers[1]).toEqual({ ok: true, value: { id: first.ok && first.value.id, replayed: true } });
    expect(answers[0]?.ok && !answers[0].value.replayed).toBe(true);
    expect(answers[2]?.ok && !answers[2].value.replayed).toBe(true);
    expect(await postsOf(author.id)).toBe(3);
    const ids = answers.map((answer) => (answer.ok ? answer.value.id : 0));
    expect(await eventsOf(ids)).toBe(3);
  });

  it("makes one post of twins asked with one key in one turn", async () => {
    const { posts, asked, author } = await setUp();
    const answers = await Promise.all([
      keyed(posts, asked(0), "twin"),
      keyed(posts, asked(0), "twin"),
      keyed(posts, asked(1), "other"),
    ]);
    const [one, two, other] = answers.map((answer) => (answer.ok ? answer.value : undefined));
    expect(one?.id).toBe(two?.id);
    expect([one?.replayed, two?.replayed].sort()).toEqual([false, true]);
    expect(other?.replayed).toBe(false);
    expect(await postsOf(author.id)).toBe(2);
    expect(await keysOf(author.id)).toEqual({ twin: one?.id, other: other?.id });
  });

  it("answers author-gone for a creation whose author is gone, storing nothing of it, and creates the others", async () => {
    const { posts, asked, author } = await setUp();
    const answers = await Promise.all([
      keyed(posts, asked(0), "first"),
      keyed(posts, asked(1, { authorId: 987_654_321 }), "orphan"),
      keyed(posts, asked(2), "third"),
    ]);
    expect(answers[1]).toEqual({ ok: false, error: "author-gone" });
    expect(answers.map((answer) => answer.ok)).toEqual([true, false, true]);
    expect(await postsOf(author.id)).toBe(2);
    expect(Object.keys(await keysOf(author.id)).sort()).toEqual(["first", "third"]);
    const { rows } = await sql<{ count: number }>`
      SELECT count(*)::int AS count FROM idempotency_keys WHERE key = 'orphan'`.execute(database().db);
    expect(rows).toEqual([{ count: 0 }]);
  });

  onServer.it(
    "lets statements of two instances claim the same keys in opposite orders without a deadlock",
    async () => {
      const connectionString = serverUrl(database());
      const instances = [1, 2].map(() => createPostgresDatabase({ connectionString, poolSize: 1 }));
      try {
        const { asked, author } = await setUp();
        const [here, there] = instances.map((instance) => new PostgresPostRepository(instance.db));
        if (here === undefined || there === undefined) throw new Error("unreachable");
        const keys = Array.from({ length: 20 }, (_, i) => i);
        // Each key's insert takes a few milliseconds, so that the two statements overlap for
        // certain: in opposite orders, each would hold keys the other waits for.
        await sql`
        CREATE FUNCTION idempotency_keys_slowly() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_sleep(0.005); RETURN NEW; END $$`.execute(database().db);
        await sql`
        CREATE TRIGGER idempotency_keys_slowly BEFORE INSERT ON idempotency_keys
        FOR EACH ROW EXECUTE FUNCTION idempotency_keys_slowly()`.execute(database().db);
        try {
          for (let round = 0; round < 3; round++) {
            const answers = await Promise.all([
              ...keys.map((i) => keyed(here, asked(i), `round ${round} key ${i}`)),
              ...[...keys].reverse().map((i) => keyed(there, asked(i), `round ${round} key ${i}`)),
            ]);
            expect(answers.every((answer) => answer.ok)).toBe(true);
            expect(answers.filter((answer) => answer.ok && answer.value.replayed)).toHaveLength(keys.length);
          }
        } finally {
          await sql`DROP TRIGGER idempotency_keys_slowly ON idempotency_keys`.execute(database().db);
          await sql`DROP FUNCTION idempotency_keys_slowly()`.execute(database().db);
        }
        expect(await postsOf(author.id)).toBe(3 * keys.length);
        const deadlocks = await sql<{ deadlocks: number }>`
        SELECT pg_stat_force_next_flush(), deadlocks::int FROM pg_stat_database WHERE datname = current_database()`.execute(
          database().db,
        );
        expect(deadlocks.rows[0]?.deadlocks).toBe(0);
      } finally {
        await Promise.all(instances.map((instance) => instance.close()));
      }
    },
  );
});
