import { createPost, MESSAGES } from "@posts/domain";
import { aUser, inMemoryDependencies, principalOf } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";

describe("createPost", () => {
  it("stores the post with the clock's time as both timestamps and the principal as author", async () => {
    const deps = inMemoryDependencies();
    const user = await aUser(deps.users);
    const result = await createPost(deps, { principal: principalOf(user), title: "제목", content: "본문" });
    expect(result).toStrictEqual({ ok: true, value: { id: expect.any(Number), replayed: false } });
    expect(result.ok && (await deps.posts.findById(result.value.id))).toStrictEqual({
      id: result.ok ? result.value.id : 0,
      title: "제목",
      content: "본문",
      createdAt: deps.clock.now(),
      updatedAt: deps.clock.now(),
      author: { id: user.id, email: user.email },
    });
  });

  it("stores title and content exactly as sent, not trimmed", async () => {
    const deps = inMemoryDependencies();
    const user = await aUser(deps.users);
    const result = await createPost(deps, {
      principal: principalOf(user),
      title: "  제목\u3000",
      content: "\n본문 ",
    });
    const stored = result.ok ? await deps.posts.findById(result.value.id) : undefined;
    expect([stored?.title, stored?.content]).toEqual(["  제목\u3000", "\n본문 "]);
  });

  it("lists every failing field, title first", async () => {
    const deps = inMemoryDependencies();
    const user = await aUser(deps.users);
    expect(await createPost(deps, { principal: principalOf(user), title: " ", content: 123 })).toStrictEqual({
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

  it("rejects a missing title or content as validation", async () => {
    const deps = inMemoryDependencies();
    const user = await aUser(deps.users);
    expect(
      await createPost(deps, { principal: principalOf(user), title: undefined, content: "x" }),
    ).toStrictEqual({
      ok: false,
      error: { kind: "validation", errors: [{ field: "title", message: MESSAGES.titleRequired }] },
    });
    expect(await createPost(deps, { principal: principalOf(user), title: "x", content: null })).toStrictEqual(
      {
        ok: false,
        error: { kind: "validation", errors: [{ field: "content", message: MESSAGES.contentRequired }] },
      },
    );
  });

  it("fails with user-gone, storing nothing, when the principal's user was deleted", async () => {
    const deps = inMemoryDependencies();
    const user = await aUser(deps.users);
    await deps.users.delete(user.id);
    expect(await createPost(deps, { principal: principalOf(user), title: "t", content: "c" })).toStrictEqual({
      ok: false,
      error: { kind: "user-gone" },
    });
    expect(await deps.posts.listPage({ limit: 10 })).toEqual([]);
  });

  it("checks validation before whether the user still exists", async () => {
    const deps = inMemoryDependencies();
    const user = await aUser(deps.users);
    await deps.users.delete(user.id);
    const result = await createPost(deps, { principal: principalOf(user), title: "", content: "c" });
    expect(result.ok === false && result.error.kind).toBe("validation");
  });
});
