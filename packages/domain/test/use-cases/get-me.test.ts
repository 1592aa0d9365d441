import { getMe } from "@posts/domain";
import { aUser, inMemoryDependencies, principalOf } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";

describe("getMe", () => {
  it("answers the principal's id, email and registration time, never the password hash", async () => {
    const deps = inMemoryDependencies();
    const user = await aUser(deps.users, { passwordHash: "secret-hash" });
    expect(await getMe(deps, principalOf(user))).toStrictEqual({
      ok: true,
      value: { id: user.id, email: user.email, createdAt: user.createdAt },
    });
  });

  it("fails with user-gone when the token outlived the user", async () => {
    const deps = inMemoryDependencies();
    const user = await aUser(deps.users);
    await deps.users.delete(user.id);
    expect(await getMe(deps, principalOf(user))).toStrictEqual({ ok: false, error: { kind: "user-gone" } });
  });
});
