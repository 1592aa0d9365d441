import { PostgresPostRepository, TrigramPendingListCleaner } from "@posts/adapters-postgres";
import { migrateTo, openTestDatabase } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { sql } from "kysely";
import { beforeEach, expect, it } from "vitest";
import { postgres, useTestDatabase } from "../use-test-database.js";
import { untilBlocked } from "../while-locked.js";

const CREATED_AT = new Date("2026-11-28T09:00:00.000Z");
const POSTS = 50;

// On a server only: PGlite runs every statement on its one connection, so a merge there could
// only queue behind the requests (the app makes no cleaner for it).
describeNeeding(postgres, "the trigram indexes' pending lists merged after writes", () => {
  const database = useTestDatabase("postgres");
  beforeEach(async () => database().truncate());
  let authors = 0;

  async function anAuthor(): Promise<number> {
    const created = await database().users.create({
      email: `pending-${++authors}@example.com`,
      passwordHash: "hash",
      createdAt: CREATED_AT,
    });
    if (!created.ok) throw new Error(created.error);
    return created.value.id;
  }

  /** Writes posts through `posts`, then updates each one's title, as a PATCH does. */
  async function write(posts: PostgresPostRepository, authorId: number): Promise<void> {
    for (let i = 0; i < POSTS; i++) {
      const post = await posts.create({
        authorId,
        title: `a title ${i}`,
        content: `some content to index, number ${i}`,
        createdAt: CREATED_AT,
      });
      if (post === undefined) throw new Error("author gone");
      const updated = await posts.update({
        id: post.id,
        authorId,
        changes: { title: `an edited title ${i}` },
        now: CREATED_AT,
      });
      if (!updated.ok) throw new Error(updated.error);
    }
  }

  /** Merges what is left in every partition's lists now, answering how many pages that was. */
  async function pagesLeft(): Promise<number> {
    const { rows } = await sql<{ left: number; indexes: number }>`
      SELECT coalesce(sum(gin_clean_pending_list(inhrelid)), 0)::int AS left, count(*)::int AS indexes
      FROM pg_inherits
      WHERE inhparent IN ('posts_title_trgm_idx'::regclass, 'posts_content_trgm_idx'::regclass,
                          'posts_chars_idx'::regclass, 'posts_char_pairs_idx'::regclass,
                          'posts_word_pairs_idx'::regclass)`.execute(database().db);
    // Three partitions (p0 to p2) of the five indexes: none of them missed.
    expect(rows[0]?.indexes).toBe(15);
    return rows[0]?.left ?? -1;
  }

  it("leaves nothing pending once the writes' merges are done (writes alone leave pages)", async () => {
    const authorId = await anAuthor();
    await pagesLeft();

    // Without a cleaner the entries stay pending: this is what the test would see if the cleaner
    // did nothing.
    await write(new PostgresPostRepository(database().db), authorId);
    expect(await pagesLeft()).toBeGreaterThan(0);

    const cleaner = new TrigramPendingListCleaner(database().db, { intervalMs: 5 });
    try {
      await write(new PostgresPostRepository(database().db, { onChange: () => cleaner.wake() }), authorId);
      await cleaner.idle();
      expect(cleaner.merged).toBeGreaterThan(0);
      expect(await pagesLeft()).toBe(0);
    } finally {
      await cleaner.close();
    }
  });

  it("merges nothing until it is woken, and nothing that was due when it closed", async () => {
    const authorId = await anAuthor();
    await pagesLeft();
    const cleaner = new TrigramPendingListCleaner(database().db, { intervalMs: 50 });
    await write(new PostgresPostRepository(database().db), authorId);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(cleaner.merged).toBe(0);

    cleaner.wake();
    await cleaner.close();
    cleaner.wake();
    await cleaner.idle();
    expect(cleaner.merged).toBe(0);
    expect(await pagesLeft()).toBeGreaterThan(0);
  });

  it("merges nothing, and fails nothing, on a schema without the indexes", async () => {
    const older = await openTestDatabase("postgres", { migrate: false });
    try {
      await migrateTo(older.db, "0003_create_attempt_counts");
      const errors: unknown[] = [];
      const cleaner = new TrigramPendingListCleaner(older.db, {
        intervalMs: 1,
        onError: (error) => errors.push(error),
      });
      cleaner.wake();
      await cleaner.idle();
      await cleaner.close();
      expect(errors).toEqual([]);
      expect(cleaner.merged).toBe(0);
    } finally {
      await older.close();
    }
  });

  it("reports a merge that failed, and merges at the next write", async () => {
    const authorId = await anAuthor();
    const errors: unknown[] = [];
    const cleaner = new TrigramPendingListCleaner(database().db, {
      intervalMs: 5,
      onError: (error) => errors.push(error),
    });
    try {
      // The merge waits for the lock a transaction that drops an index holds on it, and is
      // cancelled (the drop is rolled back).
      await database()
        .db.connection()
        .execute(async (locking) => {
          await sql`BEGIN`.execute(locking);
          await sql`DROP INDEX posts_content_trgm_idx`.execute(locking);
          try {
            cleaner.wake();
            await untilBlocked(database(), 1);
            await sql`
              SELECT pg_cancel_backend(pid) FROM pg_stat_activity
               WHERE wait_event_type = 'Lock' AND query LIKE '%gin\_clean\_pending\_list%'`.execute(
              database().db,
            );
            await cleaner.idle();
          } finally {
            await sql`ROLLBACK`.execute(locking);
          }
        });
      expect(errors).toHaveLength(1);
      expect(cleaner.merged).toBe(0);

      await write(new PostgresPostRepository(database().db, { onChange: () => cleaner.wake() }), authorId);
      await cleaner.idle();
      expect(cleaner.merged).toBeGreaterThan(0);
      expect(errors).toHaveLength(1);
    } finally {
      await cleaner.close();
    }
  });
});
