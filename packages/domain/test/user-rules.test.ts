import { isAcceptablePassword, MESSAGES, parseEmail, validateCredentials } from "@posts/domain";
import { describe, expect, it } from "vitest";

const address = (codePoints: number) => `${"a".repeat(codePoints - "@example.com".length)}@example.com`;

describe("parseEmail", () => {
  it("trims and lower-cases", () => {
    expect(parseEmail("  Writer@Example.COM \t")).toBe("writer@example.com");
  });

  it.each([
    ["no at sign", "writer.example.com"],
    ["no dot in the domain", "writer@example"],
    ["nothing before the at sign", "@example.com"],
    ["two at signs", "a@b@example.com"],
    ["white space inside", "wri ter@example.com"],
    ["a control character", "wri\u0001ter@example.com"],
    ["a lone surrogate", "wri\ud800ter@example.com"],
    ["empty", ""],
  ])("rejects an address with %s", (_, value) => {
    expect(parseEmail(value)).toBeUndefined();
  });

  it.each([[123], [null], [undefined], [["a@b.c"]]])("rejects the non-string %j", (value) => {
    expect(parseEmail(value)).toBeUndefined();
  });

  it("accepts 255 code points and rejects 256, counted after trimming", () => {
    expect(parseEmail(address(255))).toBe(address(255));
    expect(parseEmail(`  ${address(255)}  `)).toBe(address(255));
    expect(parseEmail(address(256))).toBeUndefined();
  });

  it("counts code points: 255 of them in a non-ASCII address are fine", () => {
    const email = `${"가".repeat(255 - "@example.com".length)}@example.com`;
    expect(parseEmail(email)).toBe(email);
    expect(parseEmail(`가${email}`)).toBeUndefined();
  });

  it("rejects a huge address of many dots at once instead of backtracking over it", () => {
    const started = performance.now();
    expect(parseEmail(`a@${".".repeat(200_000)}@`)).toBeUndefined();
    expect(parseEmail(`a@${"a.".repeat(8 * 1024 * 1024)}`)).toBeUndefined();
    // Unbounded, the first alone took minutes; bounded, both take milliseconds.
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("isAcceptablePassword", () => {
  it.each([
    ["7 ASCII characters", "a".repeat(7), false],
    ["8 ASCII characters", "a".repeat(8), true],
    ["128 ASCII characters", "a".repeat(128), true],
    ["129 ASCII characters", "a".repeat(129), false],
    ["7 emoji (14 UTF-16 units)", "😀".repeat(7), false],
    ["8 emoji", "😀".repeat(8), true],
    ["128 emoji (256 UTF-16 units)", "😀".repeat(128), true],
    ["129 emoji", "😀".repeat(129), false],
    ["16 MiB", "a".repeat(16 * 1024 * 1024), false],
    ["a lone high surrogate", "password\ud800", false],
    ["a lone low surrogate", "password\udfff", false],
    ["U+FFFD, which is well-formed", "password\ufffd", true],
  ])("%s: %s", (_, value, expected) => {
    expect(isAcceptablePassword(value)).toBe(expected);
  });

  it.each([[12345678], [null], [undefined], [["password"]]])("rejects the non-string %j", (value) => {
    expect(isAcceptablePassword(value)).toBe(false);
  });
});

describe("validateCredentials", () => {
  const emailError = { field: "email", message: MESSAGES.emailInvalid };
  const passwordError = { field: "password", message: MESSAGES.passwordInvalid };
  const PASSWORD = "correct horse";

  it("answers the normalized email and the password as given", () => {
    expect(validateCredentials(" A@B.co ", " pass word ")).toStrictEqual({
      ok: true,
      value: { email: "a@b.co", password: " pass word " },
    });
  });

  it.each([["no-at-sign"], ["a@b"], ["a b@example.com"], [""], [123], [null]])(
    "rejects the email %j",
    (email) => {
      expect(validateCredentials(email, PASSWORD)).toStrictEqual({
        ok: false,
        error: { kind: "validation", errors: [emailError] },
      });
    },
  );

  it("accepts an email of 255 code points and rejects 256", () => {
    expect(validateCredentials(address(255), PASSWORD).ok).toBe(true);
    expect(validateCredentials(address(256), PASSWORD)).toStrictEqual({
      ok: false,
      error: { kind: "validation", errors: [emailError] },
    });
  });

  it.each([
    ["7 emoji, though 14 UTF-16 units", "😀".repeat(7), false],
    ["8 ASCII characters", "a".repeat(8), true],
    ["128 emoji, though 256 UTF-16 units", "😀".repeat(128), true],
    ["129 ASCII characters", "a".repeat(129), false],
    ["a number", 12345678, false],
  ])("password of %s: accepted = %s", (_, password, accepted) => {
    const result = validateCredentials("writer@example.com", password);
    expect(result.ok ? "accepted" : result.error).toStrictEqual(
      accepted ? "accepted" : { kind: "validation", errors: [passwordError] },
    );
  });

  it("says a password with a lone surrogate holds a character it may not", () => {
    expect(validateCredentials("writer@example.com", "password\ud800")).toStrictEqual({
      ok: false,
      error: {
        kind: "validation",
        errors: [{ field: "password", message: MESSAGES.passwordInvalidCharacter }],
      },
    });
  });

  it("lists both fields, email first, when both fail", () => {
    expect(validateCredentials("nope", "short")).toStrictEqual({
      ok: false,
      error: { kind: "validation", errors: [emailError, passwordError] },
    });
  });
});
