import { HTTP_MESSAGES, JwtTokenIssuer } from "@posts/adapters-http";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { authentication } from "../../src/auth/authentication.js";
import { jwtKeyId } from "../../src/auth/jwt-key-id.js";
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
/** A header without kid, or with the kid of `keyOf`. */
const header = (keyOf?: string) => ({
  alg: "HS256",
  typ: "JWT",
  ...(keyOf === undefined ? {} : { kid: jwtKeyId(keyOf) }),
});
/** A token of `claims()` changed by `overrides`, signed with `secret`, naming `keyOf` in kid (no kid without it). */
const tokenOf = (secret: string, keyOf?: string, overrides: Record<string, unknown> = {}) =>
  signJwt(claims(overrides), { secret, header: header(keyOf) });

/** Fastify with authentication alone and a route answering the request's principal. */
async function appWith(secret: string, previousSecrets: readonly string[] = []): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(authentication, { secret, previousSecrets, issuer: TEST_ISSUER });
  app.get("/principal", async (request) => ({ principal: request.principal }));
  await app.ready();
  return app;
}

/** What `app` answers with `token`: the principal, or the 401's message (whose body must be exactly `{error}`). */
async function verdict(app: FastifyInstance, token: string) {
  const response = await app.inject({ url: "/principal", headers: { "x-auth-token": token } });
  if (response.statusCode === 200) return response.json() as { principal: unknown };
  expect({ status: response.statusCode, type: response.headers["content-type"] }).toEqual({
    status: 401,
    type: "application/json; charset=utf-8",
  });
  expect(Object.keys(response.json())).toEqual(["error"]);
  return { refused: (response.json() as { error: string }).error };
}

const ACCEPTED = { principal };
const INVALID = { refused: HTTP_MESSAGES.invalidToken };
const EXPIRED = { refused: HTTP_MESSAGES.expiredToken };

describe("token verification during a key rotation", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await appWith(CURRENT, [PREVIOUS, OLDER]);
  });
  afterAll(() => app.close());

  it.each([
    ["the current key", CURRENT],
    ["the previous key", PREVIOUS],
    ["an older key still listed", OLDER],
  ])("accepts a token signed with %s, naming it in kid or naming no key", async (_label, secret) => {
    expect(await verdict(app, tokenOf(secret, secret))).toEqual(ACCEPTED);
    expect(await verdict(app, tokenOf(secret))).toEqual(ACCEPTED);
  });

  it("accepts the tokens JwtTokenIssuer issues with any key held", async () => {
    for (const secret of [CURRENT, PREVIOUS]) {
      const issuer = new JwtTokenIssuer({ secret, issuer: TEST_ISSUER });
      const { token } = await issuer.issue({
        subject: "7",
        email: "seven@example.com",
        roles: ["ROLE_USER"],
      });
      expect(await verdict(app, token)).toEqual(ACCEPTED);
    }
  });

  it("checks a token with a kid with that key alone: another key's signature is 401", async () => {
    expect(await verdict(app, tokenOf(PREVIOUS, CURRENT))).toEqual(INVALID);
    expect(await verdict(app, tokenOf(CURRENT, PREVIOUS))).toEqual(INVALID);
    expect(await verdict(app, tokenOf(UNKNOWN, OLDER))).toEqual(INVALID);
  });

  it("refuses a kid that names no key held, even over a signature a held key made", async () => {
    for (const kid of [jwtKeyId(UNKNOWN), "no-such-key", "", CURRENT, 7, null]) {
      const token = signJwt(claims(), { secret: CURRENT, header: { alg: "HS256", typ: "JWT", kid } });
      expect({ kid, verdict: await verdict(app, token) }).toEqual({ kid, verdict: INVALID });
    }
  });

  it("refuses a token signed with a key in neither set, as invalid, not expired", async () => {
    expect(await verdict(app, tokenOf(UNKNOWN))).toEqual(INVALID);
    expect(await verdict(app, tokenOf(UNKNOWN, undefined, { exp: now() - 1 }))).toEqual(INVALID);
  });

  it("tells an expired token of a previous key as expired, as for the current key", async () => {
    for (const secret of [CURRENT, PREVIOUS]) {
      for (const keyOf of [secret, undefined]) {
        expect(await verdict(app, tokenOf(secret, keyOf, { exp: now() - 1 }))).toEqual(EXPIRED);
      }
    }
  });

  it.each([
    ["the current key, without kid", CURRENT, header()],
    ["a previous key, without kid", PREVIOUS, header()],
    ["a previous key, named in kid", PREVIOUS, header(PREVIOUS)],
  ])("holds every rule of the contract for %s", async (_label, secret, base) => {
    const { exp: _exp, ...withoutExp } = claims();
    const { iss: _iss, ...withoutIss } = claims();
    const cases: Record<string, string> = {
      "wrong issuer": signJwt(claims({ iss: "someone-else" }), { secret, header: base }),
      "missing iss": signJwt(withoutIss, { secret, header: base }),
      "missing exp": signJwt(withoutExp, { secret, header: base }),
      "not active yet (nbf)": signJwt(claims({ nbf: now() + 60 }), { secret, header: base }),
      "alg none, with a signature": signJwt(claims(), { secret, header: { ...base, alg: "none" } }),
      HS512: signJwt(claims(), { secret, header: { ...base, alg: "HS512" }, hash: "sha512" }),
      'sub "0"': signJwt(claims({ sub: "0" }), { secret, header: base }),
      "roles empty": signJwt(claims({ roles: [] }), { secret, header: base }),
      "trailing garbage": `${signJwt(claims(), { secret, header: base })}x`,
    };
    for (const [label, token] of Object.entries(cases)) {
      expect({ label, verdict: await verdict(app, token) }).toEqual({ label, verdict: INVALID });
    }
  });
});

describe("token verification once a previous key is no longer listed", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await appWith(CURRENT);
  });
  afterAll(() => app.close());

  it("refuses that key's tokens, with or without kid, and accepts the current key's", async () => {
    expect(await verdict(app, tokenOf(PREVIOUS))).toEqual(INVALID);
    expect(await verdict(app, tokenOf(PREVIOUS, PREVIOUS))).toEqual(INVALID);
    expect(await verdict(app, tokenOf(CURRENT))).toEqual(ACCEPTED);
    expect(await verdict(app, tokenOf(CURRENT, CURRENT))).toEqual(ACCEPTED);
  });
});

describe("a token issued before tokens named their key", () => {
  // Issued by JwtTokenIssuer when it signed with fast-jwt's signer and no kid, with the key
  // below, for user 7 at 2026-11-20T09:00:00Z, for the default day.
  const OLD_KEY = "the-old-signing-key-of-at-least-32-bytes";
  const ISSUED_WITHOUT_KID =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJwb3N0cy1zZXJ2aWNlIiwiaWF0IjoxNzk1MTY1MjAwLCJleHAiOjE3OTUyNTE2MDAsInN1YiI6IjciLCJlbWFpbCI6InNldmVuQGV4YW1wbGUuY29tIiwicm9sZXMiOlt7ImF1dGhvcml0eSI6IlJPTEVfVVNFUiJ9XX0.GxdaHJtWZboJYi5ppuLJselIFLFSh4VgZJcPLL4nzVo";
  const issuedAt = Date.UTC(2026, 10, 20, 9, 0, 0);
  const expiresAt = issuedAt + 86_400_000;

  afterEach(() => {
    vi.useRealTimers();
  });

  it("is accepted through a rotation, by its key as current then as previous, until it expires", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const beforeRotation = await appWith(OLD_KEY);
    const rotated = await appWith(CURRENT, [OLD_KEY]);
    const removed = await appWith(CURRENT);
    try {
      vi.setSystemTime(issuedAt + 60_000);
      expect(await verdict(beforeRotation, ISSUED_WITHOUT_KID)).toEqual(ACCEPTED);
      expect(await verdict(rotated, ISSUED_WITHOUT_KID)).toEqual(ACCEPTED);
      vi.setSystemTime(expiresAt - 1000);
      expect(await verdict(rotated, ISSUED_WITHOUT_KID)).toEqual(ACCEPTED);
      expect(await verdict(removed, ISSUED_WITHOUT_KID)).toEqual(INVALID);
      vi.setSystemTime(expiresAt + 1000);
      expect(await verdict(rotated, ISSUED_WITHOUT_KID)).toEqual(EXPIRED);
      expect(await verdict(beforeRotation, ISSUED_WITHOUT_KID)).toEqual(EXPIRED);
    } finally {
      await Promise.all([beforeRotation.close(), rotated.close(), removed.close()]);
    }
  });
});
