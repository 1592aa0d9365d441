import {
  DEFAULT_PAGE_SIZE,
  encodeCursor,
  type ListPostsQuery,
  listPosts,
  MESSAGES,
  type Post,
} from "@posts/domain";
import { aPost, aUser, type InMemoryDependencies, inMemoryDependencies } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";

const ids = (posts: readonly Post[]) => posts.map((post) => post.id);

async function withPosts(count: number) {
  const deps = inMemoryDependencies();
  const author = await aUser(deps.users);
  const posts: Post[] = [];
  for (let i = 0; i < count; i++) posts.push(await aPost(deps.posts, author, { title: `post ${i}` }));
  return { deps, author, posts, newestFirst: ids(posts).reverse() };
}

async function page(deps: InMemoryDependencies, query: ListPostsQuery) {
  const result = await listPosts(deps, query);
  if (!result.ok) throw new Error(`listPosts failed: ${JSON.stringify(result.error)}`);
  return result.value;
}

// Follows nextCursor to the end, answering every page.
async function walk(deps: InMemoryDependencies, query: ListPostsQuery, between?: () => Promise<unknown>) {
  const pages = [await page(deps, query)];
  for (let last = pages[0]; last?.nextCursor != null; last = pages.at(-1)) {
    await between?.();
    pages.push(await page(deps, { ...query, cursor: last.nextCursor }));
    if (pages.length > 100) throw new Error("the walk does not end");
  }
  return pages;
}

describe("listPosts", () => {
  describe("pages", () => {
    it("lists newest first (id descending), each post in full", async () => {
      const { deps, posts } = await withPosts(3);
      expect((await page(deps, {})).posts).toStrictEqual([...posts].reverse());
    });

    it(`uses ${DEFAULT_PAGE_SIZE} posts a page when no size is given, and echoes the size used`, async () => {
      const { deps, newestFirst } = await withPosts(DEFAULT_PAGE_SIZE + 5);
      const first = await page(deps, {});
      expect(first.size).toBe(DEFAULT_PAGE_SIZE);
      expect(ids(first.posts)).toEqual(newestFirst.slice(0, DEFAULT_PAGE_SIZE));
      expect(first.nextCursor).not.toBeNull();
    });

    it.each([
      [1, 1],
      ["1", 1],
      [100, 100],
      ["100", 100],
      ["07", 7],
    ])("accepts size %j as %i", async (size, expected) => {
      const { deps, newestFirst } = await withPosts(101);
      const result = await page(deps, { size });
      expect(result.size).toBe(expected);
      expect(ids(result.posts)).toEqual(newestFirst.slice(0, expected));
    });

    it("gives an empty page with no cursor when there are no posts", async () => {
      expect(await page(inMemoryDependencies(), {})).toStrictEqual({ posts: [], size: 20, nextCursor: null });
    });
  });

  describe("nextCursor", () => {
    it("is null when exactly size posts exist, so there is no trailing empty page", async () => {
      const { deps, newestFirst } = await withPosts(3);
      expect(await page(deps, { size: 3 })).toMatchObject({ nextCursor: null });
      expect(ids((await page(deps, { size: 3 })).posts)).toEqual(newestFirst);
    });

    it("is null when fewer than size posts exist", async () => {
      const { deps } = await withPosts(2);
      expect((await page(deps, { size: 3 })).nextCursor).toBeNull();
    });

    it("is set when one more post follows, and the next page holds it", async () => {
      const { deps, newestFirst } = await withPosts(4);
      const first = await page(deps, { size: 3 });
      expect(first.nextCursor).not.toBeNull();
      const second = await page(deps, { size: 3, cursor: first.nextCursor });
      expect(ids(second.posts)).toEqual(newestFirst.slice(3));
      expect(second.nextCursor).toBeNull();
    });

    it("is null on a filtered page when the author has nothing older, even if others do", async () => {
      const deps = inMemoryDependencies();
      const busy = await aUser(deps.users);
      const quiet = await aUser(deps.users);
      for (let i = 0; i < 3; i++) await aPost(deps.posts, busy);
      await aPost(deps.posts, quiet);
      await aPost(deps.posts, quiet);
      const result = await page(deps, { size: 2, userId: String(quiet.id) });
      expect(result.posts).toHaveLength(2);
      expect(result.nextCursor).toBeNull();
    });

    it("walks every post exactly once, newest first", async () => {
      const { deps, newestFirst } = await withPosts(7);
      const pages = await walk(deps, { size: "3" });
      expect(pages.map((p) => p.posts.length)).toEqual([3, 3, 1]);
      expect(pages.flatMap((p) => ids(p.posts))).toEqual(newestFirst);
    });

    it("walks every post exactly once while posts are created between pages; new ones stay out", async () => {
      const { deps, author, newestFirst } = await withPosts(7);
      const pages = await walk(deps, { size: 2 }, () => aPost(deps.posts, author, { title: "new" }));
      expect(pages.flatMap((p) => ids(p.posts))).toEqual(newestFirst);
    });

    it("continues past a post deleted after it ended a page", async () => {
      const { deps, author, newestFirst } = await withPosts(5);
      const first = await page(deps, { size: 2 });
      await deps.posts.delete({ id: newestFirst[1] as number, authorId: author.id });
      expect(ids((await page(deps, { size: 2, cursor: first.nextCursor })).posts)).toEqual(
        newestFirst.slice(2, 4),
      );
    });
  });

  describe("userId", () => {
    it("keeps only that author's posts, also across pages", async () => {
      const deps = inMemoryDependencies();
      const a = await aUser(deps.users);
      const b = await aUser(deps.users);
      const mine: number[] = [];
      for (let i = 0; i < 5; i++) {
        mine.push((await aPost(deps.posts, a)).id);
        await aPost(deps.posts, b);
      }
      const pages = await walk(deps, { size: 2, userId: String(a.id) });
      expect(pages.flatMap((p) => ids(p.posts))).toEqual(mine.reverse());
      expect(pages.flatMap((p) => p.posts.map((post) => post.author.id))).toEqual(Array(5).fill(a.id));
    });

    it.each([["99999999999999999999"], ["0"], ["123456"], [0], [2 ** 63], [1e21], [123456]])(
      "gives an empty page for %s, which names nobody",
      async (userId) => {
        const { deps } = await withPosts(3);
        expect(await listPosts(deps, { userId })).toStrictEqual({
          ok: true,
          value: { posts: [], size: 20, nextCursor: null },
        });
      },
    );

    it("accepts the id as a number too", async () => {
      const { deps, author, newestFirst } = await withPosts(2);
      expect(ids((await page(deps, { userId: author.id })).posts)).toEqual(newestFirst);
    });
  });

  describe("invalid parameters", () => {
    it.each([[0], ["0"], [101], ["101"], ["abc"], [1.5], ["1.5"], ["-1"], [-1], [""], [" 5"], [null], [[5]]])(
      "rejects size %j",
      async (size) => {
        const { deps } = await withPosts(1);
        expect(await listPosts(deps, { size })).toStrictEqual({
          ok: false,
          error: { kind: "validation", errors: [{ field: "size", message: MESSAGES.sizeInvalid }] },
        });
      },
    );

    it.each([
      ["abc"],
      ["-1"],
      ["1.5"],
      [" 1"],
      [""],
      [-1],
      [1.5],
      [true],
      [Number.NaN],
      [Number.POSITIVE_INFINITY],
    ])("rejects userId %j", async (userId) => {
      const { deps } = await withPosts(1);
      expect(await listPosts(deps, { userId })).toStrictEqual({
        ok: false,
        error: { kind: "validation", errors: [{ field: "userId", message: MESSAGES.userIdInvalid }] },
      });
    });

    it("rejects a tampered cursor", async () => {
      const { deps } = await withPosts(3);
      const cursor = (await page(deps, { size: 1 })).nextCursor ?? "";
      const tampered = `${cursor.slice(0, -1)}${cursor.endsWith("A") ? "B" : "A"}`;
      for (const bad of [tampered, `${cursor}=`, `${cursor}x`, "garbage!", "", encodeCursor(0)]) {
        expect(await listPosts(deps, { cursor: bad })).toStrictEqual({
          ok: false,
          error: { kind: "validation", errors: [{ field: "cursor", message: MESSAGES.cursorInvalid }] },
        });
      }
    });

    it("rejects a cursor that is not a string", async () => {
      const { deps } = await withPosts(1);
      const result = await listPosts(deps, { cursor: 5 });
      expect(result.ok === false && result.error).toStrictEqual({
        kind: "validation",
        errors: [{ field: "cursor", message: MESSAGES.cursorInvalid }],
      });
    });

    it("lists every invalid parameter together", async () => {
      const { deps } = await withPosts(1);
      expect(await listPosts(deps, { size: "0", cursor: "garbage!", userId: "abc" })).toStrictEqual({
        ok: false,
        error: {
          kind: "validation",
          errors: [
            { field: "size", message: MESSAGES.sizeInvalid },
            { field: "cursor", message: MESSAGES.cursorInvalid },
            { field: "userId", message: MESSAGES.userIdInvalid },
          ],
        },
      });
    });

    it("rejects an invalid size even when userId names nobody", async () => {
      const { deps } = await withPosts(1);
      const result = await listPosts(deps, { size: "101", userId: "99999999999999999999" });
      expect(result.ok === false && result.error.kind).toBe("validation");
    });
  });
});
