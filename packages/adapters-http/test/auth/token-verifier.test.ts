import { describe, expect, it } from "vitest";
import { keyRingDecoder, tokenVerifier } from "../../src/auth/token-verifier.js";
import { signJwt, TEST_ISSUER } from "../support/mint-token.js";

const CURRENT = "current-key-that-is-at-least-32-bytes-long";
const PREVIOUS = "previous-key-that-is-at-least-32-bytes-long";
const OLDER = "an-older-key-that-is-at-least-32-bytes-long";
const UNKNOWN = "a-key-nobody-here-knows-of-at-least-32-bytes";

const now = () => Math.floor(Date.now() / 1000);
const claims = (overrides: Record<string, unknown> = {}) => ({
  iss: TEST_ISSUER,
  iat: now(),
  exp: now() + 3600,
  sub: "7",
  email: "seven@example.com",
  roles: [{ authority: "ROLE_USER" }],
  ...overrides,
});
const principal = { userId: 7, email: "seven@example.com", authority: "ROLE_USER" };
const INVALID = { valid: false, expired: false };

describe("tokenVerifier over keyRingDecoder (a key rotation)", () => {
  const verify = tokenVerifier(keyRingDecoder([CURRENT, PREVIOUS, OLDER], TEST_ISSUER));

  it.each([
    ["the current key", CURRENT],
    ["the previous key", PREVIOUS],
    ["an older key still listed", OLDER],
  ])("accepts a token signed with %s", (_label, secret) => {
    expect(verify(signJwt(claims(), { secret }))).toEqual({ valid: true, principal });
  });

  it("refuses a token signed with a key in neither set, as invalid, not expired", () => {
    expect(verify(signJwt(claims(), { secret: UNKNOWN }))).toEqual(INVALID);
  });

  it("tells an expired token of a previous key as expired, as for the current key", () => {
    for (const secret of [CURRENT, PREVIOUS]) {
      expect(verify(signJwt(claims({ exp: now() - 1 }), { secret }))).toEqual({
        valid: false,
        expired: true,
      });
    }
  });

  it.each([
    ["the current key", CURRENT],
    ["a previous key", PREVIOUS],
  ])("holds every rule of the contract for %s", (_label, secret) => {
    const { exp: _exp, ...withoutExp } = claims();
    const { iss: _iss, ...withoutIss } = claims();
    const cases: Record<string, string> = {
      "wrong issuer": signJwt(claims({ iss: "someone-else" }), { secret }),
      "missing iss": signJwt(withoutIss, { secret }),
      "missing exp": signJwt(withoutExp, { secret }),
      "not active yet (nbf)": signJwt(claims({ nbf: now() + 60 }), { secret }),
      "alg none, with a signature": signJwt(claims(), { secret, header: { alg: "none", typ: "JWT" } }),
      HS512: signJwt(claims(), { secret, header: { alg: "HS512", typ: "JWT" }, hash: "sha512" }),
      'sub "0"': signJwt(claims({ sub: "0" }), { secret }),
      "roles empty": signJwt(claims({ roles: [] }), { secret }),
      "trailing garbage": `${signJwt(claims(), { secret })}x`,
    };
    for (const [label, token] of Object.entries(cases)) {
      expect({ label, verdict: verify(token) }).toEqual({ label, verdict: INVALID });
    }
  });

  it("refuses a previous key's token once that key is no longer listed", () => {
    const rolled = tokenVerifier(keyRingDecoder([CURRENT], TEST_ISSUER));
    expect(rolled(signJwt(claims(), { secret: PREVIOUS }))).toEqual(INVALID);
    expect(rolled(signJwt(claims(), { secret: CURRENT }))).toEqual({ valid: true, principal });
  });

  it("needs at least one key", () => {
    expect(() => keyRingDecoder([], TEST_ISSUER)).toThrow(RangeError);
  });
});
