import { describe, expect, it } from "vitest";
import { summaryLine } from "../src/runner/run-cases.js";
import { jsonOfSize } from "../src/support/bodies.js";

describe("summaryLine", () => {
  it("is N passed, M failed, with K skipped only when cases were skipped", () => {
    expect(summaryLine({ passed: 3, failed: 1, skipped: [] })).toBe("3 passed, 1 failed");
    expect(summaryLine({ passed: 3, failed: 0, skipped: [{ title: "a", reason: "b" }] })).toBe(
      "3 passed, 0 failed, 1 skipped",
    );
  });
});

describe("jsonOfSize", () => {
  it("makes a JSON object of exactly the size asked", () => {
    for (const bytes of [26, 27, 1000, 65_537]) {
      const text = jsonOfSize(bytes);
      expect(Buffer.byteLength(text)).toBe(bytes);
      expect(JSON.parse(text)).toMatchObject({ title: "t" });
    }
  });
});
