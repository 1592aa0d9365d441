import { MESSAGES, type PatchPostCommand, patchPost } from "@posts/domain";
import {
  aPost,
  aUser,
  type InMemoryDependencies,
  inMemoryDependencies,
  principalOf,
} from "@posts/domain/testing";
import { describe, expect, it } from "vitest";

const CREATED_AT = new Date("2026-11-22T10:15:30.123Z");

async function setUp() {
  const deps = inMemoryDependencies();
  deps.clock.set(CREATED_AT);
  const author = await aUser(deps.users);
  const stranger = await aUser(deps.users);
  const post = await aPost(deps.posts, author, {
    title: "old title",
    content: "old content",
    createdAt: CREATED_AT,
  });
  /** The post's author asks for `fields`: what most cases vary. */
  const patchAsAuthor = (fields: Omit<PatchPostCommand, "principal" | "postId">) =>
    patchPost(deps, { principal: principalOf(author), postId: String(post.id), ...fields });
  return { deps, author, stranger, post, patchAsAuthor };
}

// An id that named a post once: nothing has it now.
async function deletedPostId(deps: InMemoryDependencies, author: { id: number }) {
  const post = await aPost(deps.posts, author);
  await deps.posts.delete({ id: post.id, authorId: author.id });
  return String(post.id);
}

const kindOf = (result: { ok: boolean; error?: { kind: string } }) => (result.ok ? "ok" : result.error?.kind);

describe("patchPost", () => {
  describe("what changes", () => {
    it("changes only the title when only the title is present", async () => {
      const { deps, post, patchAsAuthor } = await setUp();
      const result = await patchAsAuthor({ title: "new" });
      expect(result.ok && [result.value.title, result.value.content]).toEqual(["new", "old content"]);
      expect((await deps.posts.findById(post.id))?.content).toBe("old content");
    });

    it("changes only the content when only the content is present", async () => {
      const { patchAsAuthor } = await setUp();
      const result = await patchAsAuthor({ content: "new" });
      expect(result.ok && [result.value.title, result.value.content]).toEqual(["old title", "new"]);
    });

    it("changes both when both are present", async () => {
      const { patchAsAuthor } = await setUp();
      const result = await patchAsAuthor({ title: "new title", content: "new content" });
      expect(result.ok && [result.value.title, result.value.content]).toEqual(["new title", "new content"]);
    });

    it("counts a null field as absent: title null and content given changes only the content", async () => {
      const { patchAsAuthor } = await setUp();
      const result = await patchAsAuthor({ title: null, content: "x" });
      expect(result.ok && [result.value.title, result.value.content]).toEqual(["old title", "x"]);
    });

    it("counts a null field as absent: content null and title given changes only the title", async () => {
      const { patchAsAuthor } = await setUp();
      const result = await patchAsAuthor({ title: "x", content: null });
      expect(result.ok && [result.value.title, result.value.content]).toEqual(["x", "old content"]);
    });

    it("stores the text exactly as sent, not trimmed", async () => {
      const { patchAsAuthor } = await setUp();
      const result = await patchAsAuthor({ title: " 😀 ", content: "\u3000본문\n" });
      expect(result.ok && [result.value.title, result.value.content]).toEqual([" 😀 ", "\u3000본문\n"]);
    });

    it("answers the post as stored after the change, with its author's id and email", async () => {
      const { deps, author, post, patchAsAuthor } = await setUp();
      const result = await patchAsAuthor({ title: "new" });
      expect(result).toStrictEqual({ ok: true, value: await deps.posts.findById(post.id) });
      expect(result.ok && result.value.author).toStrictEqual({ id: author.id, email: author.email });
    });
  });

  describe("timestamps", () => {
    it("moves updatedAt strictly past the previous updatedAt and createdAt when the clock has not moved", async () => {
      const { deps, author, post } = await setUp();
      const principal = principalOf(author);
      const first = await patchPost(deps, { principal, postId: String(post.id), title: "one" });
      const second = await patchPost(deps, { principal, postId: String(post.id), title: "two" });
      if (!first.ok || !second.ok) throw new Error("patch failed");
      expect(first.value.updatedAt.getTime()).toBeGreaterThan(CREATED_AT.getTime());
      expect(second.value.updatedAt.getTime()).toBeGreaterThan(first.value.updatedAt.getTime());
      expect(second.value.createdAt).toStrictEqual(CREATED_AT);
    });

    it("uses the clock's time as updatedAt once it has moved on", async () => {
      const { deps, patchAsAuthor } = await setUp();
      deps.clock.advance(60_000);
      const result = await patchAsAuthor({ title: "new" });
      expect(result.ok && result.value.updatedAt).toStrictEqual(deps.clock.now());
    });

    it("still moves updatedAt forward when the clock steps back", async () => {
      const { deps, patchAsAuthor } = await setUp();
      deps.clock.advance(-3_600_000);
      const result = await patchAsAuthor({ title: "new" });
      expect(result.ok && result.value.updatedAt.getTime()).toBe(CREATED_AT.getTime() + 1);
    });

    it("never changes createdAt", async () => {
      const { deps, author, post } = await setUp();
      deps.clock.advance(5000);
      await patchPost(deps, { principal: principalOf(author), postId: String(post.id), content: "new" });
      expect((await deps.posts.findById(post.id))?.createdAt).toStrictEqual(CREATED_AT);
    });
  });

  describe("each failure on its own", () => {
    it.each([
      ["no fields", {}],
      ["both null", { title: null, content: null }],
      ["both undefined", { title: undefined, content: undefined }],
    ])("fails with empty-patch for %s", async (_, fields) => {
      const { deps, author, post } = await setUp();
      expect(
        await patchPost(deps, { principal: principalOf(author), postId: String(post.id), ...fields }),
      ).toStrictEqual({ ok: false, error: { kind: "empty-patch" } });
    });

    it("fails with validation listing every failing present field", async () => {
      const { patchAsAuthor } = await setUp();
      expect(await patchAsAuthor({ title: "", content: ["x"] })).toStrictEqual({
        ok: false,
        error: {
          kind: "validation",
          errors: [
            { field: "title", message: MESSAGES.titleRequired },
            { field: "content", message: MESSAGES.contentNotString },
          ],
        },
      });
    });

    it("fails with validation for a too-long title and leaves the post unchanged", async () => {
      const { deps, post, patchAsAuthor } = await setUp();
      const result = await patchAsAuthor({ title: "😀".repeat(256), content: "valid" });
      expect(result).toStrictEqual({
        ok: false,
        error: { kind: "validation", errors: [{ field: "title", message: MESSAGES.titleTooLong }] },
      });
      expect(await deps.posts.findById(post.id)).toStrictEqual(post);
    });

    it.each([
      ["a deleted post", "deleted"],
      ["an id beyond 64 bits", "99999999999999999999"],
      ["zero", "0"],
    ])("fails with post-not-found for %s", async (_, which) => {
      const { deps, author } = await setUp();
      const postId = which === "deleted" ? await deletedPostId(deps, author) : which;
      expect(await patchPost(deps, { principal: principalOf(author), postId, title: "x" })).toStrictEqual({
        ok: false,
        error: { kind: "post-not-found" },
      });
    });

    it("fails with not-post-author (modify) and leaves someone else's post unchanged", async () => {
      const { deps, stranger, post } = await setUp();
      deps.clock.advance(1000);
      expect(
        await patchPost(deps, {
          principal: principalOf(stranger),
          postId: String(post.id),
          title: "mine now",
        }),
      ).toStrictEqual({ ok: false, error: { kind: "not-post-author", action: "modify" } });
      expect(await deps.posts.findById(post.id)).toStrictEqual(post);
    });
  });

  // When two checks would fail, the one the contract lists first decides the answer.
  describe("order of checks", () => {
    it("checks both-null before existence: {} on a missing post is empty-patch", async () => {
      const { deps, author } = await setUp();
      const postId = await deletedPostId(deps, author);
      expect(kindOf(await patchPost(deps, { principal: principalOf(author), postId }))).toBe("empty-patch");
      expect(
        kindOf(
          await patchPost(deps, {
            principal: principalOf(author),
            postId: "99999999999999999999",
            title: null,
          }),
        ),
      ).toBe("empty-patch");
    });

    it("checks both-null before authorship: {} on someone else's post is empty-patch", async () => {
      const { deps, stranger, post } = await setUp();
      expect(
        kindOf(await patchPost(deps, { principal: principalOf(stranger), postId: String(post.id) })),
      ).toBe("empty-patch");
    });

    it("checks validation before existence: an invalid title on a missing post is validation", async () => {
      const { deps, author } = await setUp();
      const postId = await deletedPostId(deps, author);
      expect(kindOf(await patchPost(deps, { principal: principalOf(author), postId, title: " " }))).toBe(
        "validation",
      );
      expect(
        kindOf(
          await patchPost(deps, {
            principal: principalOf(author),
            postId: "99999999999999999999",
            content: 1,
          }),
        ),
      ).toBe("validation");
    });

    it("checks validation before authorship: an invalid content on someone else's post is validation", async () => {
      const { deps, stranger, post } = await setUp();
      expect(
        kindOf(
          await patchPost(deps, {
            principal: principalOf(stranger),
            postId: String(post.id),
            content: "\u0000",
          }),
        ),
      ).toBe("validation");
    });

    it("checks existence before authorship: someone else naming a deleted post gets post-not-found", async () => {
      const { deps, author, stranger } = await setUp();
      const postId = await deletedPostId(deps, author);
      expect(kindOf(await patchPost(deps, { principal: principalOf(stranger), postId, title: "x" }))).toBe(
        "post-not-found",
      );
    });
  });

  describe("expected versions", () => {
    it("changes the post when it is at an expected version, and answers the new version", async () => {
      const { deps, post, patchAsAuthor } = await setUp();
      deps.clock.advance(1000);
      const result = await patchAsAuthor({ title: "new", expectedVersions: [new Date(0), post.updatedAt] });
      expect(result).toStrictEqual({
        ok: true,
        value: { ...post, title: "new", updatedAt: deps.clock.now() },
      });
    });

    it("fails with version-mismatch, changing nothing, on a version the post has moved past", async () => {
      const { deps, post, patchAsAuthor } = await setUp();
      const seen = post.updatedAt;
      const moved = await patchAsAuthor({ title: "1" });
      const stale = await patchAsAuthor({ content: "2", expectedVersions: [seen] });
      expect(stale).toStrictEqual({ ok: false, error: { kind: "version-mismatch" } });
      expect(await deps.posts.findById(post.id)).toStrictEqual(moved.ok ? moved.value : undefined);
    });

    it("fails with version-mismatch for an empty list (a malformed precondition)", async () => {
      const { deps, post, patchAsAuthor } = await setUp();
      expect(await patchAsAuthor({ title: "x", expectedVersions: [] })).toStrictEqual({
        ok: false,
        error: { kind: "version-mismatch" },
      });
      expect(await deps.posts.findById(post.id)).toStrictEqual(post);
    });

    it("without expected versions, changes the post whatever its version", async () => {
      const { deps, author, post } = await setUp();
      await patchPost(deps, { principal: principalOf(author), postId: String(post.id), title: "1" });
      expect(
        kindOf(
          await patchPost(deps, { principal: principalOf(author), postId: String(post.id), title: "2" }),
        ),
      ).toBe("ok");
    });

    it("checks both-null before the version: an empty patch with a stale version is empty-patch", async () => {
      const { patchAsAuthor } = await setUp();
      expect(kindOf(await patchAsAuthor({ title: null, expectedVersions: [] }))).toBe("empty-patch");
    });

    it("checks validation before the version", async () => {
      const { patchAsAuthor } = await setUp();
      expect(kindOf(await patchAsAuthor({ title: " ", expectedVersions: [] }))).toBe("validation");
    });

    it("answers version-mismatch to a client naming a version of a post deleted since", async () => {
      const { deps, author } = await setUp();
      const post = await aPost(deps.posts, author);
      await deps.posts.delete({ id: post.id, authorId: author.id });
      const patch = (expectedVersions?: readonly Date[]) =>
        patchPost(deps, {
          principal: principalOf(author),
          postId: String(post.id),
          title: "x",
          ...(expectedVersions === undefined ? {} : { expectedVersions }),
        });

      expect(kindOf(await patch([post.updatedAt]))).toBe("version-mismatch");
      expect(kindOf(await patch([]))).toBe("post-not-found");
      expect(kindOf(await patch())).toBe("post-not-found");
    });

    it("checks existence before the version", async () => {
      const { deps, author } = await setUp();
      for (const postId of [await deletedPostId(deps, author), "99999999999999999999"]) {
        expect(
          kindOf(
            await patchPost(deps, {
              principal: principalOf(author),
              postId,
              title: "x",
              expectedVersions: [],
            }),
          ),
        ).toBe("post-not-found");
      }
    });

    it("checks authorship before the version, whether or not the version matches", async () => {
      const { deps, stranger, post } = await setUp();
      for (const expectedVersions of [[], [post.updatedAt]]) {
        expect(
          await patchPost(deps, {
            principal: principalOf(stranger),
            postId: String(post.id),
            title: "x",
            expectedVersions,
          }),
        ).toStrictEqual({ ok: false, error: { kind: "not-post-author", action: "modify" } });
      }
      expect(await deps.posts.findById(post.id)).toStrictEqual(post);
    });
  });
});
