import { isRecoveryConflict } from "@posts/adapters-postgres";
import { describe, expect, it } from "vitest";

describe("recovery conflicts", () => {
  it("are a standby cancelling a query for replay's sake, not any serialization failure", () => {
    const conflict = Object.assign(new Error("canceling statement due to conflict with recovery"), {
      code: "40001",
    });
    const serialization = Object.assign(new Error("could not serialize access due to concurrent update"), {
      code: "40001",
    });
    expect(isRecoveryConflict(conflict)).toBe(true);
    expect(isRecoveryConflict(serialization)).toBe(false);
  });
});
