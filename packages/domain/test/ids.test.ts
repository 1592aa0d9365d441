import { parseId } from "@posts/domain";
import { describe, expect, it } from "vitest";

describe("parseId", () => {
  it.each([
    ["1", 1],
    ["42", 42],
    ["9007199254740991", Number.MAX_SAFE_INTEGER],
    // Leading zeros are still digits naming a number, as a Long path variable reads them.
    ["01", 1],
    // Zeros in front do not count towards the sixteen significant digits.
    ["00000000000000001", 1],
    ["0009007199254740991", Number.MAX_SAFE_INTEGER],
    [7, 7],
  ])("reads %j as %i", (raw, expected) => {
    expect(parseId(raw)).toBe(expected);
  });

  it.each([
    ["zero", "0"],
    ["empty", ""],
    ["one past the largest safe integer", "9007199254740992"],
    ["one past the largest safe integer, zero-padded", "09007199254740992"],
    ["only zeros", "000"],
    ["beyond 64 bits", "99999999999999999999"],
    ["a thousand digits", "9".repeat(1000)],
    ["negative", "-1"],
    ["exponent notation", "1e3"],
    ["a leading space", " 1"],
    ["a trailing space", "1 "],
    ["a sign", "+1"],
    ["a decimal", "1.0"],
    ["hexadecimal", "0x10"],
    ["full-width digits", "１２"],
    ["the number zero", 0],
    ["a negative number", -1],
    ["a fraction", 1.5],
    ["an unsafe number", 2 ** 53],
    ["NaN", Number.NaN],
    ["null", null],
    ["a bigint", 1n],
  ])("answers undefined for %s", (_, raw) => {
    expect(parseId(raw)).toBeUndefined();
  });
});
