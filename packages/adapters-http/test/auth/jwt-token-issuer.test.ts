import { createHmac } from "node:crypto";
import { JwtTokenIssuer } from "@posts/adapters-http";
import { describe, expect, it } from "vitest";
import { TEST_ISSUER, TEST_SECRET } from "../support/mint-token.js";

const decode = (part: string | undefined) => JSON.parse(Buffer.from(part ?? "", "base64url").toString());

// The RFC 7638 thumbprint of TEST_SECRET's key, as jose's calculateJwkThumbprint computes it.
const TEST_SECRET_KID = "TLSU6rKs_7VgO0PiWBTq_z5fWfekv-K-nfgDixLsslM";

describe("JwtTokenIssuer", () => {
  it("signs HS256 with a kid, iss, iat, exp = iat + ttl, sub, email and roles", async () => {
    const now = Date.UTC(2026, 10, 22, 10, 15, 30, 999);
    const issuer = new JwtTokenIssuer({
      secret: TEST_SECRET,
      issuer: TEST_ISSUER,
      ttlMs: 86_400_000,
      now: () => now,
    });
    const issued = await issuer.issue({ subject: "7", email: "writer@example.com", roles: ["ROLE_USER"] });
    expect(issued.expiresInMs).toBe(86_400_000);
    const [header, payload, signature] = issued.token.split(".");
    expect(decode(header)).toStrictEqual({ alg: "HS256", typ: "JWT", kid: TEST_SECRET_KID });
    expect(decode(payload)).toStrictEqual({
      iss: TEST_ISSUER,
      iat: Math.floor(now / 1000),
      exp: Math.floor(now / 1000) + 86_400,
      sub: "7",
      email: "writer@example.com",
      roles: [{ authority: "ROLE_USER" }],
    });
    expect(createHmac("sha256", TEST_SECRET).update(`${header}.${payload}`).digest("base64url")).toBe(
      signature,
    );
  });

  it("names the key in kid, the same for one key wherever it signs, never revealing it", async () => {
    const kidOf = async (secret: string) => {
      const issued = await new JwtTokenIssuer({ secret, issuer: TEST_ISSUER }).issue({
        subject: "1",
        email: "a@b.co",
        roles: ["ROLE_USER"],
      });
      return decode(issued.token.split(".")[0]).kid as string;
    };
    const another = "another-key-that-is-at-least-32-bytes-long";
    expect(await kidOf(TEST_SECRET)).toBe(TEST_SECRET_KID);
    expect(await kidOf(another)).not.toBe(TEST_SECRET_KID);
    for (const [secret, kid] of [
      [TEST_SECRET, TEST_SECRET_KID],
      [another, await kidOf(another)],
    ] as const) {
      const key = Buffer.from(secret);
      for (const encoding of ["utf8", "base64", "base64url", "hex"] as const) {
        expect(kid).not.toContain(key.toString(encoding).replace(/=+$/, ""));
      }
    }
  });

  it("defaults the lifetime to one day", async () => {
    const issuer = new JwtTokenIssuer({ secret: TEST_SECRET, issuer: TEST_ISSUER });
    const issued = await issuer.issue({ subject: "1", email: "a@b.co", roles: ["ROLE_USER"] });
    const claims = decode(issued.token.split(".")[1]);
    expect(issued.expiresInMs).toBe(86_400_000);
    expect(claims.exp - claims.iat).toBe(86_400);
  });

  it("refuses a secret shorter than 32 bytes and a lifetime under a second", () => {
    expect(() => new JwtTokenIssuer({ secret: "x".repeat(31), issuer: "i" })).toThrow(RangeError);
    expect(() => new JwtTokenIssuer({ secret: TEST_SECRET, issuer: "i", ttlMs: 999 })).toThrow(RangeError);
    // 32 bytes of UTF-8 in fewer characters is enough.
    expect(() => new JwtTokenIssuer({ secret: "가".repeat(11), issuer: "i" })).not.toThrow();
  });
});
