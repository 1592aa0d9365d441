import { aPost, aUser, InMemoryDatabase } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";

// What the fake promises beyond the port contract: callers cannot reach into its storage.
describe("InMemoryDatabase", () => {
  it("hands out copies: mutating a returned post's dates does not change the stored post", async () => {
    const db = new InMemoryDatabase();
    const author = await aUser(db.users);
    const post = await aPost(db.posts, author, { createdAt: new Date("2026-11-22T10:15:30.123Z") });
    post.createdAt.setTime(0);
    post.updatedAt.setTime(0);
    const found = await db.posts.findById(post.id);
    expect(found?.createdAt.toISOString()).toBe("2026-11-22T10:15:30.123Z");
    expect(found?.updatedAt.toISOString()).toBe("2026-11-22T10:15:30.123Z");
  });

  it("keeps its own copy of the now an update was given", async () => {
    const db = new InMemoryDatabase();
    const author = await aUser(db.users);
    const post = await aPost(db.posts, author, { createdAt: new Date("2026-11-22T10:15:30.123Z") });
    const now = new Date("2026-11-22T11:00:00.000Z");
    await db.posts.update({ id: post.id, authorId: author.id, changes: { title: "x" }, now });
    now.setTime(0);
    expect((await db.posts.findById(post.id))?.updatedAt.toISOString()).toBe("2026-11-22T11:00:00.000Z");
  });

  it("keeps separate databases apart", async () => {
    const one = new InMemoryDatabase();
    const other = new InMemoryDatabase();
    const author = await aUser(one.users);
    await aPost(one.posts, author);
    expect(await other.users.findById(author.id)).toBeUndefined();
    expect(await other.posts.listPage({ limit: 10 })).toEqual([]);
  });
});
