import {
  answerForUsedKey,
  applyOwnedUpdate,
  checkOwnedWrite,
  matchesPageQuery,
  type Post,
  postTextBytes,
  selectPage,
  selectSearchPage,
} from "@posts/domain";
import { describe, expect, it } from "vitest";

const CREATED_AT = new Date("2026-11-22T10:15:30.123Z");
const at = (offsetMs: number) => new Date(CREATED_AT.getTime() + offsetMs);

const post: Post = {
  id: 7,
  title: "Hello World",
  content: "100% snake_case in C:\\path, 안녕하세요 👍🏽",
  createdAt: CREATED_AT,
  updatedAt: at(1000),
  author: { id: 3, email: "writer@example.com" },
};

describe("matchesPageQuery", () => {
  it("selects every post when the query names only a limit", () => {
    expect(matchesPageQuery(post, { limit: 1 })).toBe(true);
  });

  it("keeps ids below beforeId, exclusive", () => {
    expect(matchesPageQuery(post, { limit: 1, beforeId: 8 })).toBe(true);
    expect(matchesPageQuery(post, { limit: 1, beforeId: 7 })).toBe(false);
  });

  it("keeps the author's posts only", () => {
    expect(matchesPageQuery(post, { limit: 1, authorId: 3 })).toBe(true);
    expect(matchesPageQuery(post, { limit: 1, authorId: 4 })).toBe(false);
  });

  it("finds the search in the title or the content, ASCII letters in any case", () => {
    for (const search of ["hello", "WORLD", "lo wo", "SNAKE_CASE", "안녕", "👍🏽"]) {
      expect(matchesPageQuery(post, { limit: 1, search }), search).toBe(true);
    }
  });

  it("folds no letter beyond ASCII and takes %, _ and \\ literally", () => {
    const accented = { ...post, title: "Émile", content: "ÉCOLE" };
    expect(matchesPageQuery(accented, { limit: 1, search: "émile" })).toBe(false);
    expect(matchesPageQuery(accented, { limit: 1, search: "école" })).toBe(false);
    expect(matchesPageQuery(accented, { limit: 1, search: "Émile" })).toBe(true);
    for (const search of ["100%%", "%snake", "snake%case", "snake case", "C:\\\\path", "👍🏿", "여러분"]) {
      expect(matchesPageQuery(post, { limit: 1, search }), search).toBe(false);
    }
  });

  it("applies every filter at once", () => {
    expect(matchesPageQuery(post, { limit: 1, beforeId: 8, authorId: 3, search: "hello" })).toBe(true);
    expect(matchesPageQuery(post, { limit: 1, beforeId: 8, authorId: 3, search: "bye" })).toBe(false);
    expect(matchesPageQuery(post, { limit: 1, beforeId: 8, authorId: 4, search: "hello" })).toBe(false);
    expect(matchesPageQuery(post, { limit: 1, beforeId: 7, authorId: 3, search: "hello" })).toBe(false);
  });
});

describe("selectPage", () => {
  const byId = (id: number, authorId = 3, title = "Hello World"): Post => ({
    ...post,
    id,
    title,
    author: { id: authorId, email: `${authorId}@example.com` },
  });
  const ids = (posts: readonly Post[]) => posts.map((each) => each.id);

  it("answers the matching posts newest first, whatever order they came in", () => {
    const posts = [byId(2), byId(9), byId(4), byId(7), byId(1)];
    expect(ids(selectPage(posts, { limit: 10 }))).toEqual([9, 7, 4, 2, 1]);
    expect(ids(selectPage(new Map(posts.map((each) => [each.id, each])).values(), { limit: 10 }))).toEqual([
      9, 7, 4, 2, 1,
    ]);
  });

  it("stops at the limit, after the filters", () => {
    const posts = [1, 2, 3, 4, 5, 6].map((id) => byId(id, id % 2 === 0 ? 3 : 4));
    expect(ids(selectPage(posts, { limit: 2 }))).toEqual([6, 5]);
    expect(ids(selectPage(posts, { limit: 2, authorId: 4 }))).toEqual([5, 3]);
    expect(ids(selectPage(posts, { limit: 2, authorId: 4, beforeId: 5 }))).toEqual([3, 1]);
    expect(ids(selectPage(posts, { limit: 0 }))).toEqual([]);
  });

  it("keeps what matchesPageQuery keeps, search included, and answers the same objects", () => {
    const posts = [byId(1, 3, "a cat"), byId(2, 3, "a dog"), byId(3, 3, "CATS")];
    const page = selectPage(posts, { limit: 10, search: "cat" });
    expect(ids(page)).toEqual([3, 1]);
    expect(page[0]).toBe(posts[2]);
  });
});

describe("selectSearchPage", () => {
  const byId = (id: number, authorId: number, title: string): Post => ({
    ...post,
    id,
    title,
    author: { id: authorId, email: `${authorId}@example.com` },
  });
  // Ids 1..10 in any order, the odd ones by author 2; "cat" in 2, 5, 6 and 9.
  const posts = [4, 9, 1, 6, 10, 2, 8, 5, 3, 7].map((id) =>
    byId(id, 1 + (id % 2), [2, 5, 6, 9].includes(id) ? "a Cat" : "a dog"),
  );

  it("reads the budget's newest posts below the cursor and stops at the last one read", () => {
    expect(selectSearchPage(posts, { limit: 3, search: "cat" }, 4)).toEqual({
      posts: [byIdOf(9)],
      resumeBelow: 7,
    });
    expect(selectSearchPage(posts, { limit: 3, search: "cat", beforeId: 7 }, 4)).toEqual({
      posts: [byIdOf(6), byIdOf(5)],
      resumeBelow: 3,
    });
  });

  it("stops at the limit's matches without an answer of where, and ends with the posts", () => {
    expect(selectSearchPage(posts, { limit: 2, search: "cat" }, 5)).toEqual({
      posts: [byIdOf(9), byIdOf(6)],
    });
    // Fewer posts left than the budget: the search is over.
    expect(selectSearchPage(posts, { limit: 3, search: "cat", beforeId: 3 }, 4)).toEqual({
      posts: [byIdOf(2)],
    });
    // A full page says nothing of where it stopped: the search continues after its last post.
    expect(selectSearchPage(posts, { limit: 3, search: "dog", beforeId: 5 }, 4)).toEqual({
      posts: [byIdOf(4), byIdOf(3), byIdOf(1)],
    });
    expect(selectSearchPage(posts, { limit: 9, search: "cat", beforeId: 5 }, 4)).toEqual({
      posts: [byIdOf(2)],
    });
  });

  it("reads the author's posts only, with the budget counted in them", () => {
    // Author 2 wrote the odd ids: 9, 7, 5 read, 5 matches; 3 and 1 remain.
    expect(selectSearchPage(posts, { limit: 3, search: "cat", authorId: 2 }, 3)).toEqual({
      posts: [byIdOf(9), byIdOf(5)],
      resumeBelow: 5,
    });
  });

  it("reads the posts' text up to its bytes, the first post whatever its size, and stops at the last one read", () => {
    // Every post's text: "a Cat" or "a dog" (5 bytes) and the builder's content.
    const each = postTextBytes(byIdOf(10) as Post);
    expect(postTextBytes({ title: "é한😀", content: "" })).toBe(2 + 3 + 4);
    // Room for two posts and a half: 10 and 9 read, 9 matches, 8 not read.
    expect(selectSearchPage(posts, { limit: 3, search: "cat" }, 100, 2.5 * each)).toEqual({
      posts: [byIdOf(9)],
      resumeBelow: 9,
    });
    // Less than one post: the first is read all the same, and the next page goes on.
    expect(selectSearchPage(posts, { limit: 3, search: "cat", beforeId: 10 }, 100, 1)).toEqual({
      posts: [byIdOf(9)],
      resumeBelow: 9,
    });
    expect(selectSearchPage(posts, { limit: 3, search: "cat", beforeId: 9 }, 100, 1)).toEqual({
      posts: [],
      resumeBelow: 8,
    });
    // Exactly the bytes of the posts left: the search is over.
    expect(selectSearchPage(posts, { limit: 3, search: "cat", beforeId: 4 }, 100, 3 * each)).toEqual({
      posts: [byIdOf(2)],
    });
    // A full page stops at the limit within its bytes, as without them.
    expect(selectSearchPage(posts, { limit: 2, search: "cat" }, 100, 5 * each)).toEqual({
      posts: [byIdOf(9), byIdOf(6)],
    });
  });

  function byIdOf(id: number) {
    return posts.find((each) => each.id === id);
  }
});

describe("checkOwnedWrite", () => {
  it("answers the post for its author, unconditionally or at an expected version", () => {
    expect(checkOwnedWrite(post, { authorId: 3 })).toStrictEqual({ ok: true, value: post });
    expect(checkOwnedWrite(post, { authorId: 3, expectedVersions: [at(-5), at(1000)] })).toStrictEqual({
      ok: true,
      value: post,
    });
  });

  it("decides not-found, then not-author, then version-mismatch", () => {
    expect(checkOwnedWrite(undefined, { authorId: 3, expectedVersions: [] })).toStrictEqual({
      ok: false,
      error: "not-found",
    });
    expect(checkOwnedWrite(post, { authorId: 4, expectedVersions: [] })).toStrictEqual({
      ok: false,
      error: "not-author",
    });
    expect(checkOwnedWrite(post, { authorId: 3, expectedVersions: [] })).toStrictEqual({
      ok: false,
      error: "version-mismatch",
    });
  });

  it("compares versions to the millisecond", () => {
    for (const near of [at(999), at(1001)]) {
      expect(checkOwnedWrite(post, { authorId: 3, expectedVersions: [near] })).toStrictEqual({
        ok: false,
        error: "version-mismatch",
      });
    }
  });
});

describe("applyOwnedUpdate", () => {
  const now = at(60_000);

  it("answers a new post with the present changes applied and updatedAt moved to now, leaving the post alone", () => {
    const before = structuredClone(post);
    expect(applyOwnedUpdate(post, { authorId: 3, changes: { title: "New" }, now })).toStrictEqual({
      ok: true,
      value: { ...post, title: "New", updatedAt: now },
    });
    expect(applyOwnedUpdate(post, { authorId: 3, changes: { content: "" }, now })).toStrictEqual({
      ok: true,
      value: { ...post, content: "", updatedAt: now },
    });
    expect(post).toStrictEqual(before);
  });

  it("keeps a field whose change is present as undefined", () => {
    const update = { authorId: 3, changes: { title: undefined, content: "c" }, now };
    const updated = applyOwnedUpdate(post, update);
    expect(updated.ok && updated.value.title).toBe("Hello World");
  });

  it("stores updatedAt as nextUpdatedAt says, in a Date of its own", () => {
    const stale = at(500);
    const updated = applyOwnedUpdate(post, { authorId: 3, changes: { title: "x" }, now: stale });
    expect(updated.ok && updated.value.updatedAt).toStrictEqual(at(1001));
    const fresh = applyOwnedUpdate(post, { authorId: 3, changes: { title: "x" }, now });
    expect(fresh.ok && fresh.value.updatedAt).not.toBe(now);
  });

  it("fails as checkOwnedWrite does, in its order, at the expected versions", () => {
    const update = { changes: { title: "x" }, now, expectedVersions: [at(1000)] };
    expect(applyOwnedUpdate(undefined, { ...update, authorId: 3 })).toStrictEqual({
      ok: false,
      error: "not-found",
    });
    expect(applyOwnedUpdate(post, { ...update, authorId: 4 })).toStrictEqual({
      ok: false,
      error: "not-author",
    });
    expect(applyOwnedUpdate(post, { ...update, authorId: 3, expectedVersions: [at(999)] })).toStrictEqual({
      ok: false,
      error: "version-mismatch",
    });
    expect(applyOwnedUpdate(post, { ...update, authorId: 3 }).ok).toBe(true);
  });
});

describe("answerForUsedKey", () => {
  const newPost = { authorId: 3, title: "t", content: "c", createdAt: CREATED_AT };
  const use = { postId: 7, title: "t", content: "c", expiresAt: at(1) };

  it("answers nothing for a key never used, so the post is stored", () => {
    expect(answerForUsedKey(undefined, newPost)).toBeUndefined();
  });

  it("replays the post the key made for the same text, until the key expires", () => {
    expect(answerForUsedKey(use, newPost)).toStrictEqual({ ok: true, value: { id: 7, replayed: true } });
    expect(answerForUsedKey(use, { ...newPost, createdAt: at(1) })).toBeUndefined();
  });

  it("refuses another title or content, compared exactly, while the key stands", () => {
    for (const text of [{ title: "T" }, { title: "t " }, { content: "C" }, { title: "tc", content: "" }]) {
      expect(answerForUsedKey(use, { ...newPost, ...text })).toStrictEqual({
        ok: false,
        error: "key-reused",
      });
    }
    expect(answerForUsedKey(use, { ...newPost, title: "T", createdAt: at(1) })).toBeUndefined();
  });
});
