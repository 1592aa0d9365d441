import { decodeCursor, encodeCursor } from "@posts/domain";
import { describe, expect, it } from "vitest";

const base64url = (text: string) => btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

describe("cursor", () => {
  it.each([[1], [42], [1_000_000], [Number.MAX_SAFE_INTEGER]])("round-trips %i", (id) => {
    expect(decodeCursor(encodeCursor(id))).toBe(id);
  });

  it("is URL-safe text with no padding", () => {
    for (const id of [1, 62, 63, 255, 65_535, Number.MAX_SAFE_INTEGER]) {
      expect(encodeCursor(id)).toMatch(/^[A-Za-z0-9_-]+$/);
    }
  });

  it("gives different ids different cursors", () => {
    expect(encodeCursor(10)).not.toBe(encodeCursor(11));
  });

  it.each([
    ["empty", ""],
    ["not base64url", "abc!"],
    ["padded", `${encodeCursor(5)}==`],
    ["standard base64 characters", "+/+/"],
    ["too long", "A".repeat(65)],
    ["a bare id", "5"],
    ["base64 of a bare id", base64url("5")],
    ["another version", base64url("v2.5")],
    ["no id", base64url("v1.")],
    ["id zero", base64url("v1.0")],
    ["a negative id", base64url("v1.-1")],
    ["an id with leading zeros", base64url("v1.05")],
    ["an id beyond 64 bits", base64url("v1.99999999999999999999")],
    ["trailing text", base64url("v1.5 ")],
    ["a length no base64 has", "djEuN"],
  ])("rejects a cursor that is %s", (_, cursor) => {
    expect(decodeCursor(cursor)).toBeUndefined();
  });

  it("rejects a second spelling of a valid cursor, so one position has one cursor", () => {
    const cursor = encodeCursor(5);
    // The last base64 character carries bits that decoding drops: a twin decodes to the same text.
    const twin = `${cursor.slice(0, -1)}${String.fromCharCode(cursor.charCodeAt(cursor.length - 1) + 1)}`;
    expect(atob(twin.replace(/-/g, "+").replace(/_/g, "/"))).toBe(atob(cursor));
    expect(decodeCursor(twin)).toBeUndefined();
  });
});
