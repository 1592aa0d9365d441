import { canonicalTimeZone } from "@posts/domain";
import { describe, expect, it } from "vitest";

describe("canonicalTimeZone", () => {
  it.each([
    ["UTC", "UTC"],
    ["utc", "UTC"],
    ["asia/seoul", "Asia/Seoul"],
    ["Asia/Seoul", "Asia/Seoul"],
    ["AMERICA/NEW_YORK", "America/New_York"],
  ])("spells %s as %s", (name, canonical) => {
    expect(canonicalTimeZone(name)).toBe(canonical);
  });

  it("throws a RangeError for a zone the runtime does not know", () => {
    expect(() => canonicalTimeZone("Mars/Olympus")).toThrow(RangeError);
  });
});
