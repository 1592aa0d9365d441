import { describe, expect, it } from "vitest";
import { jwtKeyId } from "../../src/auth/jwt-key-id.js";
import { JwtKeyRing } from "../../src/auth/jwt-key-ring.js";
import { signJwt } from "../support/mint-token.js";

const CURRENT = "current-key-that-is-at-least-32-bytes-long";
const PREVIOUS = "previous-key-that-is-at-least-32-bytes-long";
const OLDER = "an-older-key-that-is-at-least-32-bytes-long";
const UNKNOWN = "a-key-nobody-here-knows-of-at-least-32-bytes";

const token = (secret: string, header: Record<string, unknown> = { alg: "HS256", typ: "JWT" }) =>
  signJwt({ sub: "7" }, { secret, header });
const part = (value: string) => Buffer.from(value).toString("base64url");

describe("JwtKeyRing", () => {
  const ring = new JwtKeyRing(CURRENT, [PREVIOUS, OLDER]);

  it("holds each key once, the current one first", () => {
    expect(new JwtKeyRing(CURRENT, [PREVIOUS, CURRENT, PREVIOUS]).secrets).toEqual([CURRENT, PREVIOUS]);
  });

  it("answers the key a kid names, whichever key made the signature", () => {
    for (const secret of [CURRENT, PREVIOUS, OLDER]) {
      const kid = jwtKeyId(secret);
      expect(ring.keyFor(token(secret, { alg: "HS256", kid }))).toBe(secret);
      expect(ring.keyFor(token(UNKNOWN, { alg: "HS256", kid }))).toBe(secret);
    }
  });

  it("answers no key for a kid that names none held", () => {
    for (const kid of [jwtKeyId(UNKNOWN), "", "current", CURRENT, 1, null, { kid: jwtKeyId(CURRENT) }]) {
      expect(ring.keyFor(token(CURRENT, { alg: "HS256", kid }))).toBeUndefined();
    }
  });

  it("answers, for a token without kid, the key whose signature it carries", () => {
    for (const secret of [CURRENT, PREVIOUS, OLDER]) expect(ring.keyFor(token(secret))).toBe(secret);
  });

  it("answers the current key for a token without kid that no key signed, or not with HS256", () => {
    expect(ring.keyFor(token(UNKNOWN))).toBe(CURRENT);
    expect(ring.keyFor(token(PREVIOUS, { alg: "HS512", typ: "JWT" }))).toBe(CURRENT);
    expect(ring.keyFor(`${token(PREVIOUS).slice(0, -1)}`)).toBe(CURRENT);
  });

  it("answers the current key for a header it cannot read", () => {
    const [, payload, signature] = token(PREVIOUS).split(".");
    for (const header of ["", part("not json"), part("[1]"), part("null"), "!!"]) {
      expect(ring.keyFor(`${header}.${payload}.${signature}`)).toBe(CURRENT);
    }
    expect(ring.keyFor("no-dots")).toBe(CURRENT);
  });

  it("answers the same for a header seen before, and past the headers it remembers", () => {
    const remembering = new JwtKeyRing(CURRENT, [PREVIOUS]);
    for (let round = 0; round < 2; round += 1) {
      for (let variant = 0; variant < 100; variant += 1) {
        const secret = variant % 2 === 0 ? CURRENT : PREVIOUS;
        const header = { alg: "HS256", kid: jwtKeyId(secret), variant };
        expect(remembering.keyFor(token(UNKNOWN, header))).toBe(secret);
      }
      expect(remembering.keyFor(token(CURRENT, { alg: "HS256", kid: jwtKeyId(UNKNOWN) }))).toBeUndefined();
      expect(remembering.keyFor(token(PREVIOUS))).toBe(PREVIOUS);
    }
  });
});
