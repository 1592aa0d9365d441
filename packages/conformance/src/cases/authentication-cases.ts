import type { ApiClient } from "../http/api-client.js";
import type { CaseContext, ConformanceCase } from "../runner/conformance-case.js";
import {
  expectEmpty,
  expectEnvelope,
  expectEqual,
  expectErrorJson,
  expectStatus,
  expectThat,
  objectOf,
} from "../support/expectations.js";
import { LOGIN, POSTS, USER } from "../support/fixture.js";
import {
  type Claims,
  decodeHeader,
  handMadeToken,
  INVALID_TOKEN,
  TokenForge,
} from "../support/token-forge.js";
import { expectPageReply, expectPostReply, expectUserReply } from "../support/wire-shapes.js";

const section = "docs/authentication.md#using-the-token";

/** A token must be refused (401 {error}) on a protected endpoint and on a public one alike. */
async function expectRefused(api: ApiClient, token: string): Promise<void> {
  expectErrorJson(await api.get(USER, { token }));
  expectErrorJson(await api.post(POSTS, { token, json: { title: "t", content: "c" } }));
  expectErrorJson(await api.get(`${POSTS}?size=1`, { token }));
}

/** The case: a token made from the writer's claims changed by `change` is refused. */
function refusesClaims(name: string, change: (claims: Claims) => Claims): ConformanceCase {
  return {
    section,
    name,
    needsSecret: true,
    async run({ api, fixture, forge }: CaseContext) {
      const writer = await fixture.shared("writer");
      await expectRefused(api, await forge.sign(change(forge.claimsFor(writer))));
    },
  };
}

function without(claims: Claims, name: string): Claims {
  const { [name]: _removed, ...rest } = claims;
  return rest;
}

/** The claims the service issues, built without its key (for tokens whose signature is wrong anyway). */
function claimsOf(user: { readonly id: number; readonly email: string }, issuer: string): Claims {
  return TokenForge.withRandomKey(issuer).claimsFor(user);
}

/** The `kid` in the header of a token the service issued; a mismatch when there is none. */
function kidOf(token: string): string {
  const kid = objectOf(decodeHeader(token), "token header").kid;
  expectThat(typeof kid === "string" && kid !== "", "token header kid", "a non-empty string", kid);
  return kid as string;
}

/** docs/authentication.md#using-the-token: where a token travels, and every way it can be invalid. */
export const authenticationCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "an invalid token on ANY path → 401 application/json; charset=utf-8 with exactly one property, error",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const token = INVALID_TOKEN;
      const replies = [
        await api.get(POSTS, { token }),
        await api.get(`${POSTS}/1`, { token }),
        await api.get(`${POSTS}/abc`, { token }),
        await api.post(POSTS, { token, json: { title: "t", content: "c" } }),
        await api.patch(`${POSTS}/1`, { token, json: { title: "t" } }),
        await api.delete(`${POSTS}/1`, { token }),
        await api.get(USER, { token }),
        await api.post(USER, { token, json: { email: "x@example.com", password: "long enough" } }),
        await api.post(LOGIN, { token, json: { email: writer.email, password: writer.password } }),
        await api.get("/api/v1/does-not-exist", { token }),
        await api.request("PUT", POSTS, { token, json: {} }),
      ];
      for (const reply of replies) expectErrorJson(reply, 401);
    },
  },
  {
    section,
    name: "`Bearer <token>` in X-AUTH-TOKEN is invalid: 401",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      await expectRefused(api, `Bearer ${writer.token}`);
    },
  },
  {
    section,
    name: "a token that is not three base64url parts of JSON → 401",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const [header, payload, signature] = writer.token.split(".") as [string, string, string];
      const notJson = Buffer.from("not json").toString("base64url");
      for (const token of [
        "abc",
        `${header}.${payload}`,
        `${writer.token}.${signature}`,
        `${notJson}.${payload}.${signature}`,
        `${header}.${notJson}.${signature}`,
        `${header}.${payload}.`,
        `${header}!.${payload}.${signature}`,
      ]) {
        await expectRefused(api, token);
      }
    },
  },
  {
    section,
    name: "alg none (unsigned, or with any signature) → 401",
    async run({ api, fixture, options }) {
      const writer = await fixture.shared("writer");
      const claims = claimsOf(writer, options.jwtIssuer);
      for (const alg of ["none", "None", "NONE"]) {
        await expectRefused(api, handMadeToken({ alg, typ: "JWT" }, claims));
        await expectRefused(api, handMadeToken({ alg, typ: "JWT" }, claims, writer.token.split(".")[2]));
      }
    },
  },
  {
    section,
    name: "a signature by another key, or a garbled signature of the right shape → 401",
    async run({ api, fixture, options }) {
      const writer = await fixture.shared("writer");
      const stranger = TokenForge.withRandomKey(options.jwtIssuer);
      await expectRefused(api, await stranger.sign(stranger.claimsFor(writer)));
      const [header, payload, signature] = writer.token.split(".") as [string, string, string];
      // A character in the middle: the last one may carry only padding bits.
      const at = Math.floor(signature.length / 2);
      const garbled = `${signature.slice(0, at)}${signature[at] === "A" ? "B" : "A"}${signature.slice(at + 1)}`;
      await expectRefused(api, `${header}.${payload}.${garbled}`);
      const otherPayload = Buffer.from(
        JSON.stringify({ ...claimsOf(writer, options.jwtIssuer), email: "someone@example.com" }),
      ).toString("base64url");
      await expectRefused(api, `${header}.${otherPayload}.${signature}`);
    },
  },
  {
    section,
    name: "a token in the query string or a cookie is ignored: the request is anonymous",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const token = encodeURIComponent(writer.token);
      const query = `?token=${token}&X-AUTH-TOKEN=${token}&x-auth-token=${token}&access_token=${token}`;
      expectEnvelope(await api.post(`${POSTS}${query}`, { json: { title: "t", content: "c" } }), 403, POSTS);
      expectEnvelope(await api.get(`${USER}${query}`), 403, USER);
      const cookie = `X-AUTH-TOKEN=${writer.token}; x-auth-token=${writer.token}; token=${writer.token}`;
      expectEnvelope(
        await api.post(POSTS, { headers: { cookie }, json: { title: "t", content: "c" } }),
        403,
        POSTS,
      );
      expectEnvelope(await api.get(USER, { headers: { cookie } }), 403, USER);
      // An invalid token there is ignored too: a public read succeeds.
      expectPageReply(
        await api.get(`${POSTS}?size=1&token=not-a-jwt`, { headers: { cookie: "X-AUTH-TOKEN=not-a-jwt" } }),
      );
    },
  },
  {
    section,
    name: "an empty X-AUTH-TOKEN is anonymous: public reads 200, protected endpoints 403",
    async run({ api }) {
      expectPageReply(await api.get(`${POSTS}?size=1`, { token: "" }));
      expectEnvelope(await api.post(POSTS, { token: "", json: { title: "t", content: "c" } }), 403, POSTS);
      expectEnvelope(await api.get(USER, { token: "" }), 403, USER);
    },
  },
  {
    section,
    name: "control: a token forged with --jwt-secret and the contract's claims is accepted (else every forged case below proves nothing)",
    needsSecret: true,
    async run({ api, fixture, forge }) {
      const writer = await fixture.shared("writer");
      const token = await forge.sign(forge.claimsFor(writer));
      const me = expectUserReply(await api.get(USER, { token }), 200);
      if (me.id !== writer.id) throw new Error(`the forged token named user ${me.id}, not ${writer.id}`);
      const created = await api.post(POSTS, { token, json: { title: "위조 토큰", content: "본문" } });
      expectStatus(created, 201);
    },
  },
  {
    section,
    name: "a token the service issues names its key in kid, the same at every login",
    async run({ fixture }) {
      const writer = await fixture.shared("writer");
      const again = await fixture.logIn(writer.email, writer.password);
      expectEqual(kidOf(again), kidOf(writer.token), "kid of a second login's token");
    },
  },
  {
    section,
    name: "the kid is the key's RFC 7638 thumbprint, never the key nor an encoding of it",
    needsSecret: true,
    async run({ fixture, forge, options }) {
      const writer = await fixture.shared("writer");
      const kid = kidOf(writer.token);
      expectEqual(kid, await forge.keyId(), "kid, against the thumbprint of --jwt-secret");
      const key = Buffer.from(options.jwtSecret ?? "", "utf8");
      for (const encoding of ["utf8", "base64", "base64url", "hex"] as const) {
        const encoded = key.toString(encoding).replace(/=+$/, "");
        expectThat(!kid.includes(encoded), "kid", `not containing the key (${encoding})`, kid);
      }
    },
  },
  {
    section,
    name: "a token naming the service's key in kid, signed by another key → 401",
    async run({ api, fixture, options }) {
      const writer = await fixture.shared("writer");
      const stranger = TokenForge.withRandomKey(options.jwtIssuer);
      await expectRefused(api, await stranger.sign(stranger.claimsFor(writer), "HS256", kidOf(writer.token)));
    },
  },
  {
    section,
    name: "a token forged with --jwt-secret is accepted naming its key in kid, as without kid",
    needsSecret: true,
    async run({ api, fixture, forge }) {
      const writer = await fixture.shared("writer");
      for (const kid of [await forge.keyId(), undefined]) {
        const token = await forge.sign(forge.claimsFor(writer), "HS256", kid);
        const me = expectUserReply(await api.get(USER, { token }), 200);
        expectEqual(
          me.id,
          writer.id,
          `id of the user a token ${kid === undefined ? "without" : "with"} kid names`,
        );
      }
    },
  },
  {
    section,
    name: "a kid that names no key the service holds → 401, even over a signature by --jwt-secret",
    needsSecret: true,
    async run({ api, fixture, forge, options }) {
      const writer = await fixture.shared("writer");
      const claims = forge.claimsFor(writer);
      const unknownKid = await TokenForge.withRandomKey(options.jwtIssuer).keyId();
      for (const kid of [unknownKid, "no-such-key", options.jwtSecret ?? ""]) {
        await expectRefused(api, await forge.sign(claims, "HS256", kid));
      }
    },
  },
  refusesClaims("an expired token → 401 (exp a few seconds ago: no clock skew)", (claims) => ({
    ...claims,
    iat: Math.floor(Date.now() / 1000) - 3600,
    exp: Math.floor(Date.now() / 1000) - 5,
  })),
  refusesClaims("a token without exp → 401", (claims) => without(claims, "exp")),
  refusesClaims("a wrong iss → 401", (claims) => ({ ...claims, iss: `${String(claims.iss)}-other` })),
  refusesClaims("a token without iss → 401", (claims) => without(claims, "iss")),
  {
    section,
    name: "alg HS512 (and HS256 only is accepted) with the right key → 401",
    needsSecret: true,
    async run({ api, fixture, forge }) {
      const writer = await fixture.shared("writer");
      await expectRefused(api, await forge.sign(forge.claimsFor(writer), "HS512"));
    },
  },
  refusesClaims("a token without sub → 401", (claims) => without(claims, "sub")),
  ...["0", "-1", "abc", "1.5", "", " 1"].map((sub) =>
    refusesClaims(`sub ${JSON.stringify(sub)}, not a positive integer → 401`, (claims) => ({
      ...claims,
      sub,
    })),
  ),
  refusesClaims("a token without roles → 401", (claims) => without(claims, "roles")),
  refusesClaims('roles "ROLE_USER" (not an array of {authority}) → 401', (claims) => ({
    ...claims,
    roles: "ROLE_USER",
  })),
  refusesClaims('roles {"authority": "ROLE_USER"} (not an array) → 401', (claims) => ({
    ...claims,
    roles: { authority: "ROLE_USER" },
  })),
  {
    section,
    name: "a valid token without ROLE_USER is authenticated but lacks the role: 403 on protected endpoints, 200 on reads",
    needsSecret: true,
    async run({ api, fixture, forge }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const token = await forge.guestTokenFor(writer);
      expectEnvelope(await api.post(POSTS, { token, json: { title: "t", content: "c" } }), 403, POSTS);
      expectEnvelope(
        await api.patch(`${POSTS}/${id}`, { token, json: { title: "t" } }),
        403,
        `${POSTS}/${id}`,
      );
      expectEnvelope(await api.delete(`${POSTS}/${id}`, { token }), 403, `${POSTS}/${id}`);
      expectEnvelope(await api.get(USER, { token }), 403, USER);
      expectEnvelope(await api.delete(USER, { token }), 403, USER);
      expectPageReply(await api.get(`${POSTS}?size=1`, { token }));
      expectPostReply(await api.get(`${POSTS}/${id}`, { token }));
    },
  },
  {
    section,
    name: "a valid token for a user that does not exist → 401 {error} on POST /api/v1/posts and /api/v1/user",
    needsSecret: true,
    async run({ api, fixture, forge }) {
      const gone = await fixture.register("ghost");
      expectEmpty(await api.delete(USER, { token: gone.token }), 204);
      fixture.forget(gone);
      const token = await forge.sign(forge.claimsFor(gone));
      expectErrorJson(await api.post(POSTS, { token, json: { title: "t", content: "c" } }));
      expectErrorJson(await api.get(USER, { token }));
      expectErrorJson(await api.delete(USER, { token }));
    },
  },
];
