import { login, MESSAGES, registerUser } from "@posts/domain";
import { inMemoryDependencies } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";

const PASSWORD = "correct horse";
const INVALID = { ok: false, error: { kind: "invalid-credentials" } };

async function withUser() {
  const deps = inMemoryDependencies();
  const registered = await registerUser(deps, { email: "writer@example.com", password: PASSWORD });
  if (!registered.ok) throw new Error("registration failed");
  return { deps, user: registered.value };
}

describe("login", () => {
  it("issues a one-day token whose claims name the user: subject, email and ROLE_USER", async () => {
    const { deps, user } = await withUser();
    const result = await login(deps, { email: "writer@example.com", password: PASSWORD });
    expect(result).toStrictEqual({ ok: true, value: { token: expect.any(String), expiresInMs: 86_400_000 } });
    expect(deps.tokens.issued).toStrictEqual([
      { subject: String(user.id), email: "writer@example.com", roles: ["ROLE_USER"] },
    ]);
  });

  it("normalizes the email as registration did", async () => {
    const { deps } = await withUser();
    expect((await login(deps, { email: "  WRITER@Example.com ", password: PASSWORD })).ok).toBe(true);
  });

  it("gives the same failure for an unknown email and for a wrong password", async () => {
    const { deps } = await withUser();
    const unknown = await login(deps, { email: "nobody@example.com", password: PASSWORD });
    const wrong = await login(deps, { email: "writer@example.com", password: "wrong password" });
    expect(unknown).toStrictEqual(INVALID);
    expect(wrong).toStrictEqual(unknown);
    expect(deps.tokens.issued).toEqual([]);
  });

  it("runs the hasher for an unknown email too, so timing does not tell the emails apart", async () => {
    const { deps } = await withUser();
    const before = deps.hasher.verifications;
    await login(deps, { email: "nobody@example.com", password: PASSWORD });
    expect(deps.hasher.verifications).toBe(before + 1);
    await login(deps, { email: "writer@example.com", password: "wrong password" });
    expect(deps.hasher.verifications).toBe(before + 2);
  });

  it("refuses text that is not well-formed Unicode as a validation error, before looking anyone up", async () => {
    const { deps } = await withUser();
    const before = deps.hasher.verifications;
    expect(await login(deps, { email: "writer@example.com", password: "correct hors\udfff" })).toStrictEqual({
      ok: false,
      error: {
        kind: "validation",
        errors: [{ field: "password", message: MESSAGES.passwordInvalidCharacter }],
      },
    });
    expect(await login(deps, { email: "wri\ud800ter@example.com", password: PASSWORD })).toStrictEqual({
      ok: false,
      error: { kind: "validation", errors: [{ field: "email", message: MESSAGES.emailInvalid }] },
    });
    expect(deps.hasher.verifications).toBe(before);
  });

  it("does not accept the password's stored hash as a password", async () => {
    const { deps } = await withUser();
    const hash = (await deps.users.findByEmail("writer@example.com"))?.passwordHash;
    expect(await login(deps, { email: "writer@example.com", password: hash })).toStrictEqual(INVALID);
  });

  it.each([
    ["a non-string email", { email: 1, password: PASSWORD }],
    ["a non-string password", { email: "writer@example.com", password: ["x"] }],
    ["no address at all", { email: "writer", password: PASSWORD }],
    ["nothing", { email: undefined, password: undefined }],
  ])("fails with invalid-credentials for %s", async (_, command) => {
    const { deps } = await withUser();
    expect(await login(deps, command)).toStrictEqual(INVALID);
  });

  it("fails with invalid-credentials once the user is deleted", async () => {
    const { deps, user } = await withUser();
    await deps.users.delete(user.id);
    expect(await login(deps, { email: "writer@example.com", password: PASSWORD })).toStrictEqual(INVALID);
  });
});
