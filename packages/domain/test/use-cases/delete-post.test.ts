import { deletePost } from "@posts/domain";
import { aPost, aUser, inMemoryDependencies, principalOf } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";

async function setUp() {
  const deps = inMemoryDependencies();
  const author = await aUser(deps.users);
  const stranger = await aUser(deps.users);
  const post = await aPost(deps.posts, author);
  return { deps, author, stranger, post };
}

describe("deletePost", () => {
  it("removes the author's own post and nothing else", async () => {
    const { deps, author, post } = await setUp();
    const other = await aPost(deps.posts, author);
    expect(await deletePost(deps, { principal: principalOf(author), postId: String(post.id) })).toStrictEqual(
      {
        ok: true,
        value: undefined,
      },
    );
    expect(await deps.posts.findById(post.id)).toBeUndefined();
    expect(await deps.posts.findById(other.id)).toStrictEqual(other);
  });

  it("fails with post-not-found the second time", async () => {
    const { deps, author, post } = await setUp();
    await deletePost(deps, { principal: principalOf(author), postId: String(post.id) });
    expect(await deletePost(deps, { principal: principalOf(author), postId: String(post.id) })).toStrictEqual(
      {
        ok: false,
        error: { kind: "post-not-found" },
      },
    );
  });

  it.each([["99999999999999999999"], ["0"], ["9007199254740992"]])(
    "fails with post-not-found for %s, which can name no post",
    async (postId) => {
      const { deps, author } = await setUp();
      expect(await deletePost(deps, { principal: principalOf(author), postId })).toStrictEqual({
        ok: false,
        error: { kind: "post-not-found" },
      });
    },
  );

  it("fails with not-post-author (delete) and keeps someone else's post", async () => {
    const { deps, stranger, post } = await setUp();
    expect(
      await deletePost(deps, { principal: principalOf(stranger), postId: String(post.id) }),
    ).toStrictEqual({
      ok: false,
      error: { kind: "not-post-author", action: "delete" },
    });
    expect(await deps.posts.findById(post.id)).toStrictEqual(post);
  });

  it("checks existence before authorship: someone else naming a deleted post gets post-not-found", async () => {
    const { deps, author, stranger, post } = await setUp();
    await deletePost(deps, { principal: principalOf(author), postId: String(post.id) });
    expect(
      await deletePost(deps, { principal: principalOf(stranger), postId: String(post.id) }),
    ).toStrictEqual({
      ok: false,
      error: { kind: "post-not-found" },
    });
  });

  describe("expected versions", () => {
    it("deletes the post when it is at an expected version", async () => {
      const { deps, author, post } = await setUp();
      expect(
        await deletePost(deps, {
          principal: principalOf(author),
          postId: String(post.id),
          expectedVersions: [post.updatedAt, new Date(0)],
        }),
      ).toStrictEqual({ ok: true, value: undefined });
      expect(await deps.posts.findById(post.id)).toBeUndefined();
    });

    it("fails with version-mismatch, keeping the post, on a stale version or an empty list", async () => {
      const { deps, author, post } = await setUp();
      const moved = await deps.posts.update({
        id: post.id,
        authorId: author.id,
        changes: { title: "moved on" },
        now: new Date(post.updatedAt.getTime() + 1000),
      });
      for (const expectedVersions of [[post.updatedAt], []]) {
        expect(
          await deletePost(deps, {
            principal: principalOf(author),
            postId: String(post.id),
            expectedVersions,
          }),
        ).toStrictEqual({ ok: false, error: { kind: "version-mismatch" } });
      }
      expect(await deps.posts.findById(post.id)).toStrictEqual(moved.ok ? moved.value : undefined);
    });

    it("checks existence before the version", async () => {
      const { deps, author, post } = await setUp();
      await deletePost(deps, { principal: principalOf(author), postId: String(post.id) });
      for (const postId of [String(post.id), "0", "99999999999999999999"]) {
        expect(
          await deletePost(deps, { principal: principalOf(author), postId, expectedVersions: [] }),
        ).toStrictEqual({
          ok: false,
          error: { kind: "post-not-found" },
        });
      }
    });

    it("tells writers racing with a deletion that their version is stale, not that the post is missing", async () => {
      const { deps, author, post } = await setUp();
      const sameTag = {
        principal: principalOf(author),
        postId: String(post.id),
        expectedVersions: [post.updatedAt],
      };
      const answers = await Promise.all([
        deletePost(deps, sameTag),
        deletePost(deps, sameTag),
        deletePost(deps, sameTag),
      ]);

      expect(answers.filter((answer) => answer.ok)).toHaveLength(1);
      expect(answers.filter((answer) => !answer.ok)).toStrictEqual([
        { ok: false, error: { kind: "version-mismatch" } },
        { ok: false, error: { kind: "version-mismatch" } },
      ]);
      // The same request once more, sequentially: the post is gone since the version named.
      expect(await deletePost(deps, sameTag)).toStrictEqual({
        ok: false,
        error: { kind: "version-mismatch" },
      });
      // Without a version, or with none that could be this post's, a missing post is missing.
      for (const expectedVersions of [undefined, []]) {
        expect(
          await deletePost(deps, {
            principal: principalOf(author),
            postId: String(post.id),
            ...(expectedVersions === undefined ? {} : { expectedVersions }),
          }),
        ).toStrictEqual({ ok: false, error: { kind: "post-not-found" } });
      }
    });

    it("checks authorship before the version, whether or not the version matches", async () => {
      const { deps, stranger, post } = await setUp();
      for (const expectedVersions of [[], [post.updatedAt]]) {
        expect(
          await deletePost(deps, {
            principal: principalOf(stranger),
            postId: String(post.id),
            expectedVersions,
          }),
        ).toStrictEqual({ ok: false, error: { kind: "not-post-author", action: "delete" } });
      }
      expect(await deps.posts.findById(post.id)).toStrictEqual(post);
    });
  });
});
