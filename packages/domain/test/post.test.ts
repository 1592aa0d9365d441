import { nextUpdatedAt } from "@posts/domain";
import { describe, expect, it } from "vitest";

const previous = new Date("2026-11-22T10:15:30.123Z");

describe("nextUpdatedAt", () => {
  it("answers now when it is later than the previous updatedAt", () => {
    const now = new Date("2026-11-22T10:15:30.124Z");
    expect(nextUpdatedAt(previous, now).getTime()).toBe(now.getTime());
  });

  it("answers one millisecond after the previous updatedAt when now is the same instant", () => {
    expect(nextUpdatedAt(previous, new Date(previous)).getTime()).toBe(previous.getTime() + 1);
  });

  it("answers one millisecond after the previous updatedAt when the clock is behind", () => {
    expect(nextUpdatedAt(previous, new Date("2026-11-22T09:00:00.000Z")).getTime()).toBe(
      previous.getTime() + 1,
    );
  });

  it("strictly increases over repeated writes with a clock that stands still", () => {
    let updatedAt = previous;
    for (let i = 1; i <= 3; i++) {
      updatedAt = nextUpdatedAt(updatedAt, previous);
      expect(updatedAt.getTime()).toBe(previous.getTime() + i);
    }
  });
});
