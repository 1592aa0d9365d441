import { createPost, deleteAccount, getMe } from "@posts/domain";
import { aPost, aUser, inMemoryDependencies, principalOf } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";

describe("deleteAccount", () => {
  it("removes the user and every post they wrote, and nobody else's", async () => {
    const deps = inMemoryDependencies();
    const leaving = await aUser(deps.users);
    const staying = await aUser(deps.users);
    const mine = [await aPost(deps.posts, leaving), await aPost(deps.posts, leaving)];
    const theirs = await aPost(deps.posts, staying);

    expect(await deleteAccount(deps, principalOf(leaving))).toStrictEqual({ ok: true, value: undefined });

    expect(await deps.users.findById(leaving.id)).toBeUndefined();
    for (const post of mine) expect(await deps.posts.findById(post.id)).toBeUndefined();
    expect(await deps.posts.findById(theirs.id)).toStrictEqual(theirs);
    expect(await deps.users.findById(staying.id)).toStrictEqual(staying);
  });

  it("fails with user-gone when the account was deleted already", async () => {
    const deps = inMemoryDependencies();
    const user = await aUser(deps.users);
    await deleteAccount(deps, principalOf(user));
    expect(await deleteAccount(deps, principalOf(user))).toStrictEqual({
      ok: false,
      error: { kind: "user-gone" },
    });
  });

  it("leaves the token's holder unable to read their account or write posts", async () => {
    const deps = inMemoryDependencies();
    const user = await aUser(deps.users);
    await deleteAccount(deps, principalOf(user));
    expect(await getMe(deps, principalOf(user))).toStrictEqual({ ok: false, error: { kind: "user-gone" } });
    expect(await createPost(deps, { principal: principalOf(user), title: "t", content: "c" })).toStrictEqual({
      ok: false,
      error: { kind: "user-gone" },
    });
  });
});
