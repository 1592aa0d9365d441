import { expect, it } from "vitest";
import { describeNeeding } from "../../../src/testing/vitest/describe-needing.js";

// Run by describe-needing.test.ts in a vitest of its own, with and without CI=true.
const server = { needs: "a test server", hint: "start one", present: true };
const missing = { needs: "a missing server", hint: "install it", present: false };

describeNeeding(server, "a suite whose server is there", () => {
  it("runs", () => expect(1).toBe(1));
});

describeNeeding([server, missing], "a suite whose second server is missing", () => {
  it("would run", () => expect(1).toBe(1));
  it("would run too", () => expect(1).toBe(1));
});
