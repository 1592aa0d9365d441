import { createHmac } from "node:crypto";
import { JwtTokenIssuer } from "@posts/adapters-http";
import { describe, expect, it } from "vitest";
import { TEST_ISSUER, TEST_SECRET } from "../support/mint-token.js";

const decode = (part: string | undefined) => JSON.parse(Buffer.from(part ?? "", "base64url").toString());

describe("JwtTokenIssuer", () => {
  it("signs HS256 with iss, iat, exp = iat + ttl, sub, email and roles", async () => {
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
    expect(decode(header)).toStrictEqual({ alg: "HS256", typ: "JWT" });
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
