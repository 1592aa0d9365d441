import { checkContent, checkTitle, codePointLength, MESSAGES, validatePostText } from "@posts/domain";
import { describe, expect, it } from "vitest";

const BLANKS: ReadonlyArray<readonly [string, string]> = [
  ["empty", ""],
  ["spaces", "   "],
  ["tab and line feed", "\t\n"],
  ["ideographic space U+3000", "\u3000"],
  ["no-break space U+00A0", "\u00a0"],
  ["next line U+0085", "\u0085"],
  ["line separator U+2028", "\u2028"],
  ["a mix", " \u3000\t\u2003\r\n"],
];
const NON_STRINGS: ReadonlyArray<readonly [string, unknown]> = [
  ["a number", 123],
  ["a boolean", true],
  ["an array of a string", ["x"]],
  ["an object", {}],
  ["zero", 0],
];
const INVALID_CHARACTERS: ReadonlyArray<readonly [string, string]> = [
  ["U+0000 alone", "\u0000"],
  ["U+0000 inside text", "a\u0000b"],
  ["a lone high surrogate", "\ud800"],
  ["a lone low surrogate", "\udc00"],
  ["a lone surrogate inside text", "ab\ud800cd"],
  ["surrogates in the wrong order", "\udc00\ud800"],
];

describe("checkTitle", () => {
  it("accepts 255 emoji (255 code points, 510 UTF-16 units) and rejects 256", () => {
    expect(checkTitle("😀".repeat(255))).toBeUndefined();
    expect(checkTitle("😀".repeat(256))).toBe(MESSAGES.titleTooLong);
  });

  it("accepts 255 ASCII characters and rejects 256", () => {
    expect(checkTitle("a".repeat(255))).toBeUndefined();
    expect(checkTitle("a".repeat(256))).toBe(MESSAGES.titleTooLong);
  });

  it("counts code points, not UTF-16 units, when mixing ASCII and emoji", () => {
    expect(checkTitle(`${"a".repeat(254)}😀`)).toBeUndefined();
    expect(checkTitle(`${"a".repeat(255)}😀`)).toBe(MESSAGES.titleTooLong);
  });

  it.each(BLANKS)("rejects a blank title (%s) as missing", (_, value) => {
    expect(checkTitle(value)).toBe(MESSAGES.titleRequired);
  });

  it("rejects null and undefined as missing", () => {
    expect(checkTitle(null)).toBe(MESSAGES.titleRequired);
    expect(checkTitle(undefined)).toBe(MESSAGES.titleRequired);
  });

  it.each(NON_STRINGS)("rejects %s instead of turning it into a string", (_, value) => {
    expect(checkTitle(value)).toBe(MESSAGES.titleNotString);
  });

  it.each(INVALID_CHARACTERS)("rejects %s, which PostgreSQL cannot store as sent", (_, value) => {
    expect(checkTitle(value)).toBe(MESSAGES.titleInvalidCharacter);
  });

  it("accepts a surrogate pair, a zero-width space and text with spaces around it", () => {
    expect(checkTitle("\ud83d\ude00")).toBeUndefined();
    expect(checkTitle("\u200b")).toBeUndefined();
    expect(checkTitle("  제목  ")).toBeUndefined();
  });
});

describe("checkContent", () => {
  it.each(BLANKS)("rejects a blank content (%s) as missing", (_, value) => {
    expect(checkContent(value)).toBe(MESSAGES.contentRequired);
  });

  it.each(NON_STRINGS)("rejects %s instead of turning it into a string", (_, value) => {
    expect(checkContent(value)).toBe(MESSAGES.contentNotString);
  });

  it.each(INVALID_CHARACTERS)("rejects %s", (_, value) => {
    expect(checkContent(value)).toBe(MESSAGES.contentInvalidCharacter);
  });

  it("has no length limit of its own: 2 MiB of text is valid", () => {
    expect(checkContent("가".repeat(1024 * 1024))).toBeUndefined();
  });
});

describe("validatePostText", () => {
  it("answers the text exactly as given, not trimmed", () => {
    expect(validatePostText("  제목\u3000", "\n본문 ")).toStrictEqual({
      text: { title: "  제목\u3000", content: "\n본문 " },
    });
  });

  it("lists every failing field, title first", () => {
    expect(validatePostText(" ", 123)).toStrictEqual({
      errors: [
        { field: "title", message: MESSAGES.titleRequired },
        { field: "content", message: MESSAGES.contentNotString },
      ],
    });
  });

  it("lists only the failing field when the other is valid", () => {
    expect(validatePostText("title", "\u0000")).toStrictEqual({
      errors: [{ field: "content", message: MESSAGES.contentInvalidCharacter }],
    });
  });
});

describe("codePointLength", () => {
  it.each([
    ["", 0],
    ["abc", 3],
    ["가나다", 3],
    ["😀", 1],
    ["👨‍👩‍👧", 5],
    ["\ud800", 1],
    ["\ud800\ud800", 2],
    ["\udc00\ud83d\ude00", 2],
  ])("counts %j as %i code points", (value, expected) => {
    expect(codePointLength(value)).toBe(expected);
  });
});
