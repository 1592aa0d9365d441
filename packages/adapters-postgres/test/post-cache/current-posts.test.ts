import { CurrentPosts, PostgresPostRepository, PostgresUserRepository } from "@posts/adapters-postgres";
import type { Post } from "@posts/domain";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { useTestDatabase } from "../use-test-database.js";

const CREATED_AT = new Date("2026-11-22T10:15:30.123Z");

const aPostValue = (id: number, updatedAt = CREATED_AT): Post => ({
  id,
  title: `title ${id}`,
  content: "content",
  createdAt: CREATED_AT,
  updatedAt,
  author: { id: 1, email: "writer@example.com" },
});

describe("CurrentPosts", () => {
  it("stores a post read while no write began or was in flight, and not one read across a write", async () => {
    const current = new CurrentPosts({ maxBytes: 1_000_000 });
    const quiet = current.readStarting();
    current.readDone(quiet, aPostValue(1));
    expect(current.get(1)?.id).toBe(1);

    const beforeWrite = current.readStarting();
    await current.writing(async () => undefined);
    current.readDone(beforeWrite, aPostValue(2));
    expect(current.get(2)).toBeUndefined();

    let finish = () => {};
    const write = current.writing(() => new Promise<void>((resolve) => (finish = resolve)));
    const duringWrite = current.readStarting();
    finish();
    await write;
    current.readDone(duringWrite, aPostValue(3));
    expect(current.get(3)).toBeUndefined();
  });

  it("keeps the later version when an earlier one comes after it, and forgets deletions", () => {
    const current = new CurrentPosts({ maxBytes: 1_000_000 });
    const later = aPostValue(1, new Date(CREATED_AT.getTime() + 1));
    current.written(later);
    current.written(aPostValue(1));
    expect(current.get(1)).toBe(later);
    current.written(aPostValue(2));
    current.deleted(1);
    expect(current.get(1)).toBeUndefined();
    current.authorDeleted(1);
    expect(current.size).toBe(0);
  });

  it("forgets every post when a write fails, as it may have committed", async () => {
    const current = new CurrentPosts({ maxBytes: 1_000_000 });
    current.written(aPostValue(1));
    await expect(current.writing(() => Promise.reject(new Error("lost")))).rejects.toThrow("lost");
    expect(current.get(1)).toBeUndefined();
  });
});

describe("PostgresPostRepository with the current posts on the embedded database", () => {
  const database = useTestDatabase("pglite");

  const setUp = async () => {
    const currentPosts = new CurrentPosts({ maxBytes: 1_000_000 });
    const { db } = database();
    const posts = new PostgresPostRepository(db, { currentPosts });
    const users = new PostgresUserRepository(db, { currentPosts });
    const created = await users.create({
      email: `writer-${Math.random()}@example.com`,
      passwordHash: "hash",
      createdAt: CREATED_AT,
    });
    if (!created.ok) throw new Error(created.error);
    const author = created.value;
    const write = (title: string) =>
      posts.create({ authorId: author.id, title, content: "content", createdAt: CREATED_AT });
    return { db, posts, users, author, write };
  };
  // Holds the database's one session for `ms`: what a long write of another request does.
  const holdSession = (db: ReturnType<typeof database>["db"], ms: number) =>
    sql`SELECT pg_sleep(${ms / 1000})`.execute(db);
  // Which of a lookup and the session's hold answers first.
  const firstOf = async (lookup: Promise<unknown>, held: Promise<unknown>) =>
    Promise.race([lookup.then(() => "lookup"), held.then(() => "held")]);

  it("answers a post it wrote, updated, without waiting for a statement in front", async () => {
    const { db, posts, author, write } = await setUp();
    const post = await write("first");
    if (post === undefined) throw new Error("author gone");
    const updated = await posts.update({
      id: post.id,
      authorId: author.id,
      changes: { title: "second" },
      now: new Date(CREATED_AT.getTime() + 1000),
    });
    expect(updated.ok).toBe(true);

    const held = holdSession(db, 1000);
    const lookup = posts.findById(post.id);
    expect(await firstOf(lookup, held)).toBe("lookup");
    expect((await lookup)?.title).toBe("second");
    await held;
  });

  it("reads from the database a post it does not hold, and forgets deleted posts and authors' posts", async () => {
    const { db, posts, users, author, write } = await setUp();
    const [a, b] = [await write("a"), await write("b")];
    if (a === undefined || b === undefined) throw new Error("author gone");
    // A repository without the current posts wrote this one: the first lookup asks the database.
    const other = await new PostgresPostRepository(db).create({
      authorId: author.id,
      title: "other",
      content: "content",
      createdAt: CREATED_AT,
    });
    if (other === undefined) throw new Error("author gone");
    const held = holdSession(db, 500);
    const lookup = posts.findById(other.id);
    expect(await firstOf(lookup, held)).toBe("held");
    expect((await lookup)?.title).toBe("other");

    expect((await posts.delete({ id: a.id, authorId: author.id })).ok).toBe(true);
    expect(await posts.findById(a.id)).toBeUndefined();
    expect(await users.delete(author.id)).toBe(true);
    expect(await posts.findById(b.id)).toBeUndefined();
  });
});
