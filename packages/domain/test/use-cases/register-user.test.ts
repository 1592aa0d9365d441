import { type Credentials, registerUser, validateCredentials } from "@posts/domain";
import { inMemoryDependencies } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";

const PASSWORD = "correct horse";

/** What the caller hands the use case: input that `validateCredentials` accepted. */
function validated(email: string, password = PASSWORD): Credentials {
  const checked = validateCredentials(email, password);
  if (!checked.ok) throw new Error(`test credentials are invalid: ${JSON.stringify(checked.error)}`);
  return checked.value;
}

describe("registerUser", () => {
  it("answers the new user's id, normalized email and registration time, nothing more", async () => {
    const deps = inMemoryDependencies();
    expect(await registerUser(deps, validated("  Writer@Example.COM "))).toStrictEqual({
      ok: true,
      value: { id: expect.any(Number), email: "writer@example.com", createdAt: deps.clock.now() },
    });
  });

  it("stores the normalized email, so the user is found by it", async () => {
    const deps = inMemoryDependencies();
    const result = await registerUser(deps, validated(" Writer@Example.COM"));
    expect((await deps.users.findByEmail("writer@example.com"))?.id).toBe(
      result.ok ? result.value.id : undefined,
    );
  });

  it("stores the password only as the hasher's hash", async () => {
    const deps = inMemoryDependencies();
    await registerUser(deps, validated("writer@example.com"));
    const stored = await deps.users.findByEmail("writer@example.com");
    expect(stored?.passwordHash).toBe(await deps.hasher.hash(PASSWORD));
    expect(stored?.passwordHash).not.toBe(PASSWORD);
  });

  it("fails with email-taken for a registered email written in another case or with spaces, and keeps the first", async () => {
    const deps = inMemoryDependencies();
    await registerUser(deps, validated("writer@example.com"));
    for (const email of ["WRITER@example.com", " Writer@Example.Com\t"]) {
      expect(await registerUser(deps, validated(email, "another password"))).toStrictEqual({
        ok: false,
        error: { kind: "email-taken" },
      });
    }
    expect((await deps.users.findByEmail("writer@example.com"))?.passwordHash).toBe(
      await deps.hasher.hash(PASSWORD),
    );
  });
});
