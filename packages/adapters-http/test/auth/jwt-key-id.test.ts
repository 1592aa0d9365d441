import { describe, expect, it } from "vitest";
import { jwtKeyId } from "../../src/auth/jwt-key-id.js";

describe("jwtKeyId", () => {
  // The expected ids are what jose's calculateJwkThumbprint answers for {kty: "oct", k}.
  it("is the RFC 7638 thumbprint of the key's UTF-8 bytes", () => {
    expect(jwtKeyId("test-secret-that-is-at-least-32-bytes-long!")).toBe(
      "TLSU6rKs_7VgO0PiWBTq_z5fWfekv-K-nfgDixLsslM",
    );
    expect(jwtKeyId("the-old-signing-key-of-at-least-32-bytes")).toBe(
      "ahowT_xmpThLLhT2yV7i9ijYlA1erEfxoSTD3gOHwiU",
    );
    expect(jwtKeyId("가".repeat(11))).toBe("YBdZUpxiHy7AWHZukkmbLtap79cD7bKQ564X8vQWnMs");
  });
});
