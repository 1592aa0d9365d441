import { Argon2PasswordHasher } from "@posts/adapters-http";
import { describe, expect, it } from "vitest";

describe("Argon2PasswordHasher", () => {
  // Cheap parameters keep the suite fast; the defaults are checked once below.
  const cheap = { memoryCost: 1024, timeCost: 1, parallelism: 1 };

  it("hashes with argon2id into a salted PHC string and verifies it", async () => {
    const hasher = await Argon2PasswordHasher.create(cheap);
    const first = await hasher.hash("correct horse");
    const second = await hasher.hash("correct horse");
    expect(first).toMatch(/^\$argon2id\$v=19\$m=1024,t=1,p=1\$/);
    expect(first).not.toBe(second);
    expect(first).not.toContain("correct horse");
    expect(await hasher.verify(first, "correct horse")).toBe(true);
    expect(await hasher.verify(first, "correct horsf")).toBe(false);
  });

  it("answers false, never throws, for a hash it cannot read; the decoy matches nothing", async () => {
    const hasher = await Argon2PasswordHasher.create(cheap);
    for (const broken of [
      "",
      "plain",
      "$argon2id$v=19$m=1024",
      "fake$password",
      "$2b$10$abcdefghijklmnopqrstuv",
    ]) {
      expect(await hasher.verify(broken, "password")).toBe(false);
    }
    expect(hasher.decoyHash).toMatch(/^\$argon2id\$/);
    expect(await hasher.verify(hasher.decoyHash, "")).toBe(false);
    expect(await hasher.verify(hasher.decoyHash, "password123")).toBe(false);
  });

  it("uses OWASP's argon2id parameters by default (m=19456, t=2, p=1)", async () => {
    const hasher = await Argon2PasswordHasher.create();
    expect(hasher.decoyHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    const hash = await hasher.hash("password123");
    expect(await hasher.verify(hash, "password123")).toBe(true);
  });
});
