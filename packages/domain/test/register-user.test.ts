import { MESSAGES, registerUser } from "@posts/domain";
import { inMemoryDependencies } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";

const PASSWORD = "correct horse";
const address = (codePoints: number) => `${"a".repeat(codePoints - "@example.com".length)}@example.com`;
const emailError = { field: "email", message: MESSAGES.emailInvalid };
const passwordError = { field: "password", message: MESSAGES.passwordInvalid };

describe("registerUser", () => {
  it("answers the new user's id, normalized email and registration time, nothing more", async () => {
    const deps = inMemoryDependencies();
    expect(await registerUser(deps, { email: "  Writer@Example.COM ", password: PASSWORD })).toStrictEqual({
      ok: true,
      value: { id: expect.any(Number), email: "writer@example.com", createdAt: deps.clock.now() },
    });
  });

  it("stores the normalized email, so the user is found by it", async () => {
    const deps = inMemoryDependencies();
    const result = await registerUser(deps, { email: " Writer@Example.COM", password: PASSWORD });
    expect((await deps.users.findByEmail("writer@example.com"))?.id).toBe(
      result.ok ? result.value.id : undefined,
    );
  });

  it("stores the password only as the hasher's hash", async () => {
    const deps = inMemoryDependencies();
    await registerUser(deps, { email: "writer@example.com", password: PASSWORD });
    const stored = await deps.users.findByEmail("writer@example.com");
    expect(stored?.passwordHash).toBe(await deps.hasher.hash(PASSWORD));
    expect(stored?.passwordHash).not.toBe(PASSWORD);
  });

  it.each([["no-at-sign"], ["a@b"], ["a b@example.com"], [""], [123], [null]])(
    "rejects the email %j",
    async (email) => {
      const deps = inMemoryDependencies();
      expect(await registerUser(deps, { email, password: PASSWORD })).toStrictEqual({
        ok: false,
        error: { kind: "validation", errors: [emailError] },
      });
    },
  );

  it("accepts an email of 255 code points and rejects 256", async () => {
    const deps = inMemoryDependencies();
    expect((await registerUser(deps, { email: address(255), password: PASSWORD })).ok).toBe(true);
    expect(await registerUser(deps, { email: address(256), password: PASSWORD })).toStrictEqual({
      ok: false,
      error: { kind: "validation", errors: [emailError] },
    });
  });

  it.each([
    ["7 ASCII characters", "a".repeat(7), false],
    ["8 ASCII characters", "a".repeat(8), true],
    ["128 ASCII characters", "a".repeat(128), true],
    ["129 ASCII characters", "a".repeat(129), false],
    ["7 emoji, though 14 UTF-16 units", "😀".repeat(7), false],
    ["8 emoji", "😀".repeat(8), true],
    ["128 emoji, though 256 UTF-16 units", "😀".repeat(128), true],
    ["129 emoji", "😀".repeat(129), false],
  ])("password of %s: accepted = %s", async (_, password, accepted) => {
    const deps = inMemoryDependencies();
    const result = await registerUser(deps, { email: "writer@example.com", password });
    expect(result.ok ? "accepted" : result.error).toStrictEqual(
      accepted ? "accepted" : { kind: "validation", errors: [passwordError] },
    );
  });

  it("lists both fields, email first, when both fail", async () => {
    const deps = inMemoryDependencies();
    expect(await registerUser(deps, { email: "nope", password: 12345678 })).toStrictEqual({
      ok: false,
      error: { kind: "validation", errors: [emailError, passwordError] },
    });
  });

  it("fails with email-taken for a registered email written in another case or with spaces", async () => {
    const deps = inMemoryDependencies();
    await registerUser(deps, { email: "writer@example.com", password: PASSWORD });
    for (const email of ["WRITER@example.com", " Writer@Example.Com\t"]) {
      expect(await registerUser(deps, { email, password: "another password" })).toStrictEqual({
        ok: false,
        error: { kind: "email-taken" },
      });
    }
    expect((await deps.users.findByEmail("writer@example.com"))?.passwordHash).toBe(
      await deps.hasher.hash(PASSWORD),
    );
  });

  it("checks validation before uniqueness: a taken email with a bad password is validation", async () => {
    const deps = inMemoryDependencies();
    await registerUser(deps, { email: "writer@example.com", password: PASSWORD });
    expect(await registerUser(deps, { email: "writer@example.com", password: "short" })).toStrictEqual({
      ok: false,
      error: { kind: "validation", errors: [passwordError] },
    });
  });
});
