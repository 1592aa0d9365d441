import { aUser } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";
import { expectEnvelope, expectErrorJson } from "../support/expectations.js";
import { claimsFor, signJwt, TEST_ISSUER, TEST_SECRET, tokenFor } from "../support/mint-token.js";
import { buildTestApp, useTestApp } from "../support/test-app.js";

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

describe("authentication (X-AUTH-TOKEN)", () => {
  const t = useTestApp();
  const getMe = (headers: Record<string, string | string[]>) =>
    t().app.inject({ method: "GET", url: "/api/v1/user", headers });

  const user = async () => aUser(t().deps.users);
  const now = () => Math.floor(Date.now() / 1000);

  it("accepts a valid token minted independently of the app", async () => {
    const u = await user();
    const response = await getMe({ "x-auth-token": tokenFor(u) });
    expect(response.statusCode).toBe(200);
    expect(response.json().id).toBe(u.id);
  });

  it("treats an absent or empty header as anonymous (403 on protected endpoints)", async () => {
    expectEnvelope(await getMe({}), 403, "/api/v1/user");
    expectEnvelope(await getMe({ "x-auth-token": "" }), 403, "/api/v1/user");
  });

  it("refuses every kind of invalid token with 401 {error}", async () => {
    const u = await user();
    const claims = claimsFor(u);
    const valid = tokenFor(u);
    const [header, payload, signature] = valid.split(".");
    const { iss: _iss, ...withoutIss } = claims;
    const { exp: _exp, ...withoutExp } = claims;
    const { sub: _sub, ...withoutSub } = claims;
    const { roles: _roles, ...withoutRoles } = claims;
    const cases: Record<string, string> = {
      "not three parts": "abc",
      "two parts": `${header}.${payload}`,
      "bad JSON": `${header}.${Buffer.from("{not json").toString("base64url")}.${signature}`,
      "signature of another key": signJwt(claims, { secret: "another-secret-that-is-32-bytes-long!!" }),
      "tampered payload": `${header}.${base64url({ ...claims, sub: "1" })}.${signature}`,
      "alg none, unsigned": `${base64url({ alg: "none", typ: "JWT" })}.${base64url(claims)}.`,
      "alg none, with a signature": signJwt(claims, { header: { alg: "none", typ: "JWT" } }),
      HS512: signJwt(claims, { header: { alg: "HS512", typ: "JWT" }, hash: "sha512" }),
      "HS256 token relabelled HS384": `${base64url({ alg: "HS384", typ: "JWT" })}.${payload}.${signature}`,
      "wrong issuer": signJwt({ ...claims, iss: "someone-else" }),
      "issuer as a prefix": signJwt({ ...claims, iss: "posts-service-evil" }),
      "missing iss": signJwt(withoutIss),
      "missing exp": signJwt(withoutExp),
      "expired by one second": signJwt({ ...claims, exp: now() - 1 }),
      "not active yet (nbf)": signJwt({ ...claims, nbf: now() + 60 }),
      "missing sub": signJwt(withoutSub),
      'sub "abc"': signJwt({ ...claims, sub: "abc" }),
      'sub "0"': signJwt({ ...claims, sub: "0" }),
      'sub "-1"': signJwt({ ...claims, sub: "-1" }),
      "sub a number": signJwt({ ...claims, sub: u.id }),
      "sub beyond 64 bits": signJwt({ ...claims, sub: "99999999999999999999" }),
      "roles missing": signJwt(withoutRoles),
      "roles empty": signJwt({ ...claims, roles: [] }),
      "roles a string": signJwt({ ...claims, roles: "ROLE_USER" }),
      "roles of strings": signJwt({ ...claims, roles: ["ROLE_USER"] }),
      "authority not a string": signJwt({ ...claims, roles: [{ authority: 1 }] }),
      "Bearer prefix": `Bearer ${valid}`,
      "trailing garbage": `${valid}x`,
    };
    for (const [label, token] of Object.entries(cases)) {
      const response = await getMe({ "x-auth-token": token });
      expect({ label, status: response.statusCode }).toEqual({ label, status: 401 });
      expectErrorJson(response);
    }
  });

  it("refuses a header sent twice", async () => {
    const token = tokenFor(await user());
    expectErrorJson(await getMe({ "x-auth-token": [token, token] }));
    // Over a real socket Node joins repeated headers with ", ".
    expectErrorJson(await getMe({ "x-auth-token": `${token}, ${token}` }));
  });

  it("authenticates a token without ROLE_USER but answers 403 on protected endpoints", async () => {
    const u = await user();
    expectEnvelope(
      await getMe({ "x-auth-token": tokenFor(u, { roles: [{ authority: "ROLE_ADMIN" }] }) }),
      403,
      "/api/v1/user",
    );
    const open = await t().app.inject({
      method: "GET",
      url: "/api/v1/posts",
      headers: { "x-auth-token": tokenFor(u, { roles: [{ authority: "ROLE_ADMIN" }] }) },
    });
    expect(open.statusCode).toBe(200);
  });

  it("refuses an invalid token on every path: open reads, operations and unknown paths", async () => {
    for (const [method, url] of [
      ["GET", "/api/v1/posts"],
      ["GET", "/api/v1/posts/1"],
      ["GET", "/api/v1/posts/abc"],
      ["GET", "/health"],
      ["GET", "/ready"],
      ["GET", "/metrics"],
      ["GET", "/openapi.json"],
      ["GET", "/no/such/path"],
      ["PUT", "/api/v1/posts"],
      ["POST", "/api/v1/user"],
      ["POST", "/api/v1/user/login"],
    ] as const) {
      const response = await t().app.inject({ method, url, headers: { "x-auth-token": "x.y.z" } });
      expect({ url, status: response.statusCode }).toEqual({ url, status: 401 });
      expectErrorJson(response);
    }
  });

  it("ignores a token in the query string or a cookie", async () => {
    const token = tokenFor(await user());
    expectEnvelope(
      await t().app.inject({ method: "GET", url: `/api/v1/user?token=${token}&X-AUTH-TOKEN=${token}` }),
      403,
      "/api/v1/user",
    );
    expectEnvelope(
      await getMe({ cookie: `X-AUTH-TOKEN=${token}; token=${token}`, authorization: `Bearer ${token}` }),
      403,
      "/api/v1/user",
    );
  });
});

describe("authentication during a key rotation (jwt.previousSecrets)", () => {
  const PREVIOUS = "the-key-before-this-one-at-least-32-bytes";
  const t = useTestApp({ jwt: { secret: TEST_SECRET, previousSecrets: [PREVIOUS], issuer: TEST_ISSUER } });
  const getMe = (token: string) =>
    t().app.inject({ method: "GET", url: "/api/v1/user", headers: { "x-auth-token": token } });

  it("accepts tokens of the current and the previous key, and 401s a key in neither", async () => {
    const u = await aUser(t().deps.users);
    expect((await getMe(tokenFor(u))).json().id).toBe(u.id);
    expect((await getMe(signJwt(claimsFor(u), { secret: PREVIOUS }))).json().id).toBe(u.id);
    expectErrorJson(await getMe(signJwt(claimsFor(u), { secret: "another-secret-that-is-32-bytes-long!!" })));
  });

  it("refuses to build with a previous key under 32 bytes", async () => {
    await expect(
      buildTestApp({ jwt: { secret: TEST_SECRET, previousSecrets: ["x".repeat(31)], issuer: TEST_ISSUER } }),
    ).rejects.toThrow(RangeError);
  });
});
