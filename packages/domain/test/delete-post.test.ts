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
});
