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

const ids = (posts: readonly Pick<Post, "id">[]) => posts.map((post) => post.id);

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

  describe("search (q)", () => {
    async function withTexts(texts: readonly (readonly [title: string, content: string])[]) {
      const deps = inMemoryDependencies();
      const author = await aUser(deps.users);
      const posts: Post[] = [];
      for (const [title, content] of texts) posts.push(await aPost(deps.posts, author, { title, content }));
      return { deps, author, posts };
    }
    const qError = (message: string) => ({
      ok: false,
      error: { kind: "validation", errors: [{ field: "q", message }] },
    });

    it("keeps the posts whose title or content contains q, ignoring ASCII case, newest first", async () => {
      const { deps, posts } = await withTexts([
        ["Hello", "x"],
        ["x", "y"],
        ["x", "say HELLO"],
        ["x", "hell"],
      ]);
      expect(ids((await page(deps, { q: "hello" })).posts)).toEqual([posts[2]?.id, posts[0]?.id]);
    });

    it("matches %, _ and \\ as themselves", async () => {
      const { deps, posts } = await withTexts([
        ["100%", "x"],
        ["100", "a_b"],
        ["x", "C:\\dir"],
      ]);
      expect(ids((await page(deps, { q: "%" })).posts)).toEqual([posts[0]?.id]);
      expect(ids((await page(deps, { q: "_" })).posts)).toEqual([posts[1]?.id]);
      expect(ids((await page(deps, { q: "\\" })).posts)).toEqual([posts[2]?.id]);
    });

    it("treats an empty q as no search", async () => {
      const { deps, posts } = await withTexts([
        ["a", "b"],
        ["c", "d"],
      ]);
      expect(ids((await page(deps, { q: "" })).posts)).toEqual(ids(posts).reverse());
    });

    it("pages a search by keyset with nextCursor, combined with userId", async () => {
      const { deps, author, posts } = await withTexts([
        ["match 1", "x"],
        ["other", "x"],
        ["match 2", "x"],
        ["match 3", "x"],
        ["match 4", "x"],
      ]);
      const other = await aUser(deps.users);
      await aPost(deps.posts, other, { title: "match by someone else" });
      const pages = await walk(deps, { q: "MATCH", size: 2, userId: String(author.id) });
      expect(pages.map((each) => ids(each.posts))).toEqual([
        [posts[4]?.id, posts[3]?.id],
        [posts[2]?.id, posts[0]?.id],
      ]);
      expect(pages.at(-1)?.nextCursor).toBeNull();
    });

    describe("with search pages that read three posts each", () => {
      // 20 posts, matches at 2, 9, 10 and 17 (oldest first): most pages read no match.
      const budgeted = async () => {
        const deps = inMemoryDependencies();
        const posts = deps.database.postsWithSearchBudget(3);
        const author = await aUser(deps.users);
        const made: Post[] = [];
        for (let i = 0; i < 20; i++) {
          made.push(
            await aPost(posts, author, { title: [2, 9, 10, 17].includes(i) ? `Match ${i}` : `post ${i}` }),
          );
        }
        return { deps: { ...deps, posts }, made };
      };

      it("stops early with a cursor where the page stopped, and visits every match once", async () => {
        const { deps, made } = await budgeted();
        const pages = await walk(deps, { q: "match", size: 2 });
        const at = (i: number) => made[i]?.id;
        // Each page reads three posts (19-17, 16-14, 13-11, 10-8, 7-5, 4-2) and the last the two left.
        expect(pages.map((each) => ids(each.posts))).toEqual([
          [at(17)],
          [],
          [],
          [at(10), at(9)],
          [],
          [at(2)],
          [],
        ]);
        expect(pages[0]?.nextCursor).toBe(encodeCursor(at(17) as number));
        expect(pages[1]?.nextCursor).toBe(encodeCursor(at(14) as number));
        expect(pages[3]?.nextCursor).toBe(encodeCursor(at(8) as number));
        expect(pages.at(-1)?.nextCursor).toBeNull();
      });

      it("keeps pages without q full while older posts remain", async () => {
        const { deps, made } = await budgeted();
        const pages = await walk(deps, { size: 7 });
        expect(pages.map((each) => each.posts.length)).toEqual([7, 7, 6]);
        expect(pages.flatMap((each) => ids(each.posts))).toEqual(ids(made).reverse());
      });
    });

    it("accepts a q of 200 code points, emoji counting one each", async () => {
      const { deps, posts } = await withTexts([["😀".repeat(200), "x"]]);
      expect(ids((await page(deps, { q: "😀".repeat(200) })).posts)).toEqual([posts[0]?.id]);
      expect(ids((await page(deps, { q: "a".repeat(200) })).posts)).toEqual([]);
    });

    it.each([
      ["201 ASCII characters", "a".repeat(201)],
      ["201 emoji", "😀".repeat(201)],
    ])("rejects a q of %s", async (_label, q) => {
      const { deps } = await withTexts([]);
      expect(await listPosts(deps, { q })).toStrictEqual(qError(MESSAGES.searchTooLong));
    });

    it.each([
      ["U+0000", "a\u0000b"],
      ["a lone surrogate", "a\ud800b"],
    ])("rejects a q containing %s", async (_label, q) => {
      const { deps } = await withTexts([]);
      expect(await listPosts(deps, { q })).toStrictEqual(qError(MESSAGES.searchInvalidCharacter));
    });

    it.each([[5], [["a", "b"]], [null], [true]])("rejects q %j, which is not a string", async (q) => {
      const { deps } = await withTexts([]);
      expect(await listPosts(deps, { q })).toStrictEqual(qError(MESSAGES.searchNotString));
    });

    it("lists an invalid q with the other invalid parameters, even when userId names nobody", async () => {
      const { deps } = await withTexts([]);
      expect(await listPosts(deps, { size: "0", q: "\u0000" })).toStrictEqual({
        ok: false,
        error: {
          kind: "validation",
          errors: [
            { field: "size", message: MESSAGES.sizeInvalid },
            { field: "q", message: MESSAGES.searchInvalidCharacter },
          ],
        },
      });
      expect(await listPosts(deps, { userId: "0", q: "a".repeat(201) })).toStrictEqual(
        qError(MESSAGES.searchTooLong),
      );
    });
  });
});
