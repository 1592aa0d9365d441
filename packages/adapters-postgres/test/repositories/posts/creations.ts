import { type DatabaseEngine, PostgresPostRepository } from "@posts/adapters-postgres";
import type { TestDatabase } from "@posts/adapters-postgres/testing";
import type { NewPost } from "@posts/domain";
import { sql } from "kysely";

export const CREATED_AT = new Date("2026-11-27T10:15:30.123Z");

/**
 * What the tests of creations in one statement (plain-creation.test.ts, idempotent-creation.test.ts)
 * ask of the database: a new author with a repository and the posts to ask for, and counts of what
 * the creations wrote.
 */
export function creations(database: () => TestDatabase, engine: DatabaseEngine) {
  let authors = 0;

  async function setUp() {
    const posts = new PostgresPostRepository(database().db);
    const author = await database().users.create({
      email: `creations-${engine}-${++authors}@example.com`,
      passwordHash: "hash",
      createdAt: CREATED_AT,
    });
    if (!author.ok) throw new Error(author.error);
    const asked = (i: number, changes: Partial<NewPost> = {}): NewPost => ({
      authorId: author.value.id,
      title: `post ${i}`,
      content: `content ${i}, with "quotes", a \\ backslash, {braces} and ü`,
      createdAt: new Date(CREATED_AT.getTime() + i),
      ...changes,
    });
    return { posts, asked, author: author.value };
  }

  // The transactions that wrote these posts: one when they were inserted by one statement.
  async function writers(ids: readonly number[]): Promise<number> {
    const { rows } = await sql<{ writers: number }>`
      SELECT count(DISTINCT xmin::text)::int AS writers FROM posts WHERE id = ANY(${ids}::int8[])`.execute(
      database().db,
    );
    return rows[0]?.writers ?? 0;
  }
  async function postsOf(userId: number): Promise<number> {
    const { rows } = await sql<{ count: number }>`
      SELECT count(*)::int AS count FROM posts WHERE user_id = ${userId}`.execute(database().db);
    return rows[0]?.count ?? 0;
  }
  async function eventsOf(ids: readonly number[]): Promise<number> {
    const { rows } = await sql<{ events: number }>`
      SELECT count(*)::int AS events FROM post_events
      WHERE post_id = ANY(${ids}::int8[]) AND type = 'post.created'`.execute(database().db);
    return rows[0]?.events ?? 0;
  }

  return { setUp, writers, postsOf, eventsOf };
}
