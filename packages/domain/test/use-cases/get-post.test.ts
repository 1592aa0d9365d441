import { getPost } from "@posts/domain";
import { aPost, aUser, inMemoryDependencies } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";

describe("getPost", () => {
  it("answers the post with its author's id and email", async () => {
    const deps = inMemoryDependencies();
    const author = await aUser(deps.users);
    const post = await aPost(deps.posts, author, { title: "제목", content: "본문" });
    expect(await getPost(deps, String(post.id))).toStrictEqual({
      ok: true,
      value: {
        id: post.id,
        title: "제목",
        content: "본문",
        createdAt: post.createdAt,
        updatedAt: post.updatedAt,
        author: { id: author.id, email: author.email },
      },
    });
  });

  it("fails with post-not-found for a deleted post", async () => {
    const deps = inMemoryDependencies();
    const author = await aUser(deps.users);
    const post = await aPost(deps.posts, author);
    await deps.posts.delete({ id: post.id, authorId: author.id });
    expect(await getPost(deps, String(post.id))).toStrictEqual({
      ok: false,
      error: { kind: "post-not-found" },
    });
  });

  it.each([["99999999999999999999"], ["9007199254740992"], ["0"], ["abc"], [""], ["-1"]])(
    "fails with post-not-found, without asking the repository, for %j",
    async (postId) => {
      const deps = inMemoryDependencies();
      const asked: number[] = [];
      const posts = {
        ...deps.posts,
        findById: async (id: number) => {
          asked.push(id);
          return deps.posts.findById(id);
        },
      };
      expect(await getPost({ posts }, postId)).toStrictEqual({
        ok: false,
        error: { kind: "post-not-found" },
      });
      expect(asked).toEqual([]);
    },
  );
});
