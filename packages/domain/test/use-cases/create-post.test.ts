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

describe("createPost with an idempotency key", () => {
  const DAY = 86_400_000;

  async function setUp() {
    const deps = inMemoryDependencies();
    const user = await aUser(deps.users);
    const principal = principalOf(user);
    const create = (command: { title?: unknown; content?: unknown; idempotencyKey?: string }) =>
      createPost(deps, { principal, title: "제목", content: "본문", ...command });
    const stored = async () => (await deps.posts.listPage({ limit: 100 })).map((post) => post.id);
    return { deps, user, create, stored };
  }

  it.each([
    ["one visible character", "!"],
    ["the last visible character", "~"],
    ["every visible ASCII character", `!"#$%&'()*+,-./0123456789:;<=>?@AZ[\\]^_\`az{|}~`],
    ["255 characters", "k".repeat(255)],
    ["a UUID", "8e5b4f1c-3b2a-4c6d-9e0f-1a2b3c4d5e6f"],
  ])("accepts %s", async (_label, key) => {
    const { create, stored } = await setUp();
    const result = await create({ idempotencyKey: key });
    expect(result).toStrictEqual({ ok: true, value: { id: expect.any(Number), replayed: false } });
    expect(await stored()).toHaveLength(1);
  });

  it.each([
    ["empty", ""],
    ["256 characters", "k".repeat(256)],
    ["a space", "a b"],
    ["a tab", "a\tb"],
    ["DEL (0x7F)", "a\u007fb"],
    ["a line break", "a\nb"],
    ["non-ASCII", "키"],
    ["an emoji", "😀"],
    ["two values joined by a comma and space", "a, b"],
  ])("fails with invalid-idempotency-key, storing nothing, for a key with %s", async (_label, key) => {
    const { create, stored } = await setUp();
    expect(await create({ idempotencyKey: key })).toStrictEqual({
      ok: false,
      error: { kind: "invalid-idempotency-key" },
    });
    expect(await stored()).toEqual([]);
  });

  it("checks the key before the title and content", async () => {
    const { create } = await setUp();
    expect(await create({ title: "", content: 1, idempotencyKey: "" })).toStrictEqual({
      ok: false,
      error: { kind: "invalid-idempotency-key" },
    });
  });

  it("checks the key before whether the user still exists", async () => {
    const { deps, user, create } = await setUp();
    await deps.users.delete(user.id);
    expect(await create({ idempotencyKey: " " })).toStrictEqual({
      ok: false,
      error: { kind: "invalid-idempotency-key" },
    });
  });

  it("checks title and content, every failing field, before whether the user still exists", async () => {
    const { deps, user, create } = await setUp();
    await deps.users.delete(user.id);
    expect(await create({ title: " ", content: null, idempotencyKey: "k" })).toStrictEqual({
      ok: false,
      error: {
        kind: "validation",
        errors: [
          { field: "title", message: MESSAGES.titleRequired },
          { field: "content", message: MESSAGES.contentRequired },
        ],
      },
    });
  });

  it("checks title and content before the key's earlier use", async () => {
    const { create } = await setUp();
    await create({ idempotencyKey: "k" });
    const invalid = await create({ title: "", idempotencyKey: "k" });
    expect(invalid.ok === false && invalid.error.kind).toBe("validation");
  });

  it("fails with user-gone when the user no longer exists, even for a key they used", async () => {
    const { deps, user, create, stored } = await setUp();
    await create({ idempotencyKey: "k" });
    await deps.users.delete(user.id);
    expect(await create({ idempotencyKey: "k" })).toStrictEqual({ ok: false, error: { kind: "user-gone" } });
    expect(await create({ idempotencyKey: "fresh" })).toStrictEqual({
      ok: false,
      error: { kind: "user-gone" },
    });
    expect(await stored()).toEqual([]);
  });

  it("replays the same title and content: the first post's id, marked replayed, nothing stored", async () => {
    const { create, stored } = await setUp();
    const first = await create({ idempotencyKey: "k" });
    const again = await create({ idempotencyKey: "k" });
    expect(again).toStrictEqual({ ok: true, value: { id: first.ok ? first.value.id : 0, replayed: true } });
    expect(await stored()).toEqual([first.ok ? first.value.id : 0]);
  });

  it("fails with idempotency-key-reused for another title or content, storing nothing", async () => {
    const { create, stored } = await setUp();
    await create({ idempotencyKey: "k" });
    for (const other of [{ title: "제목 " }, { content: "본문!" }, { title: "다른", content: "글" }]) {
      expect(await create({ ...other, idempotencyKey: "k" })).toStrictEqual({
        ok: false,
        error: { kind: "idempotency-key-reused" },
      });
    }
    expect(await stored()).toHaveLength(1);
  });

  it("remembers only a success: a key whose request failed creates the post when retried", async () => {
    const { create, stored } = await setUp();
    await create({ title: "", idempotencyKey: "k" });
    expect(await create({ idempotencyKey: "k" })).toStrictEqual({
      ok: true,
      value: { id: expect.any(Number), replayed: false },
    });
    expect(await stored()).toHaveLength(1);
  });

  it("remembers a key for one day by default, then creates a new post under it", async () => {
    const { deps, create, stored } = await setUp();
    const first = await create({ idempotencyKey: "k" });
    deps.clock.advance(DAY - 1);
    expect(await create({ idempotencyKey: "k" })).toStrictEqual({
      ok: true,
      value: { id: first.ok ? first.value.id : 0, replayed: true },
    });
    deps.clock.advance(1);
    const second = await create({ idempotencyKey: "k", content: "another text is no conflict now" });
    expect(second).toStrictEqual({ ok: true, value: { id: expect.any(Number), replayed: false } });
    expect(await stored()).toHaveLength(2);
  });

  it("remembers a key for idempotencyTtlMs when the dependencies say so", async () => {
    const deps = { ...inMemoryDependencies(), idempotencyTtlMs: 1000 };
    const user = await aUser(deps.users);
    const command = { principal: principalOf(user), title: "t", content: "c", idempotencyKey: "k" };
    const first = await createPost(deps, command);
    deps.clock.advance(999);
    expect(await createPost(deps, command)).toStrictEqual({
      ok: true,
      value: { id: first.ok ? first.value.id : 0, replayed: true },
    });
    deps.clock.advance(1);
    expect(await createPost(deps, command)).toStrictEqual({
      ok: true,
      value: { id: expect.any(Number), replayed: false },
    });
  });

  it("keeps keys per user", async () => {
    const { deps, create } = await setUp();
    const other = await aUser(deps.users);
    const first = await create({ idempotencyKey: "k" });
    const theirs = await createPost(deps, {
      principal: principalOf(other),
      title: "제목",
      content: "본문",
      idempotencyKey: "k",
    });
    expect(theirs).toStrictEqual({ ok: true, value: { id: expect.any(Number), replayed: false } });
    expect(theirs.ok && first.ok && theirs.value.id !== first.value.id).toBe(true);
  });
});
