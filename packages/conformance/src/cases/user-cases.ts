import type { ConformanceCase } from "../runner/conformance-case.js";
import { POST_NOT_FOUND } from "../support/contract-messages.js";
import {
  expectEmpty,
  expectEnvelope,
  expectEqual,
  expectErrorJson,
  expectHeader,
  expectKeys,
  expectStatus,
  expectText,
  expectThat,
  JSON_UTF8,
  jsonOf,
  objectOf,
} from "../support/expectations.js";
import { LOGIN, POSTS, USER } from "../support/fixture.js";
import { decodeHeader, decodePayload, INVALID_TOKEN } from "../support/token-forge.js";
import { expectPageReply, expectUserReply } from "../support/wire-shapes.js";

const section = "docs/authentication.md";

/** An address of exactly `length` characters: `local`, then domain labels of at most 63 letters. */
function emailOfLength(local: string, length: number): string {
  const suffix = "example.com";
  let budget = length - local.length - 1 - suffix.length;
  const labels: string[] = [];
  while (budget >= 2) {
    const size = Math.min(63, budget - 1);
    labels.push("d".repeat(size));
    budget -= size + 1;
  }
  return `${local}${"l".repeat(budget)}@${[...labels, suffix].join(".")}`;
}

/** docs/authentication.md: registration, login, one's own account, its deletion, and the login throttle. */
export const userCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "an email or password with a lone surrogate → 400 envelope at registration and at login: two different passwords never become one",
    async run({ api, fixture }) {
      const email = fixture.email("surrogate");
      const refused = await api.post(USER, { json: { email, password: "password\ud800" } });
      expectEnvelope(refused, 400, USER);
      const badEmail = await api.post(USER, {
        json: { email: `x\udfff${email}`, password: fixture.password() },
      });
      expectEnvelope(badEmail, 400, USER);
      // U+FFFD is well-formed: what a lone surrogate would have become once encoded.
      await fixture.registerWith(email, "password\ufffd");
      for (const password of ["password\ud800", "password\udfff"]) {
        expectEnvelope(await api.post(LOGIN, { json: { email, password } }), 400, LOGIN);
      }
    },
  },
  {
    section,
    name: "POST /api/v1/user → 201 {id, email, createdAt}, email trimmed and lower-cased, Location ending in /api/v1/user",
    async run({ api, fixture }) {
      const email = fixture.email("register");
      const password = fixture.password();
      const reply = await api.post(USER, { json: { email: `  ${email.toUpperCase()}\t`, password } });
      const user = expectUserReply(reply, 201);
      const registered = await fixture.adopt(reply, password);
      expectEqual(user.email, email, "email");
      const location = reply.headers.get("location");
      expectThat(
        location !== null && URL.canParse(location) && new URL(location).pathname.endsWith(USER),
        `${reply.request}: Location`,
        "an absolute URL ending in /api/v1/user",
        location,
      );
      expectEqual(registered.id, user.id, "id");
    },
  },
  {
    section,
    name: "an email already registered, in any letter case → 409 envelope",
    async run({ api, fixture }) {
      const user = await fixture.register("taken");
      const again = await api.post(USER, {
        json: { email: user.email.toUpperCase(), password: fixture.password() },
      });
      expectEnvelope(again, 409, USER);
    },
  },
  {
    section,
    name: "bad registrations → 400 envelope, never 429 however many (12 in a row), and they change nothing",
    async run({ api, fixture }) {
      const email = fixture.email("badinput");
      const bodies: unknown[] = [
        { email: "not-an-email", password: "long enough" },
        { email: "two@@example.com", password: "long enough" },
        { email: emailOfLength("x", 256), password: "long enough" },
        { email: 12345, password: "long enough" },
        { password: "long enough" },
        { email },
      ];
      for (const password of ["short", "1234567", "x".repeat(129), "", 12345678, null])
        bodies.push({ email, password });
      for (const json of bodies) expectEnvelope(await api.post(USER, { json }), 400, USER);
      // The same email then registers: none of the refusals stored it or counted against it.
      await fixture.registerWith(email, fixture.password());
    },
  },
  {
    section,
    name: "boundaries are accepted: an email of 255 characters, passwords of 8 and of 128 characters",
    async run({ fixture }) {
      const local = (fixture.email("long").split("@")[0] as string).slice(0, 64);
      const long = await fixture.registerWith(emailOfLength(local, 255), "8 chars!");
      expectEqual(long.email.length, 255, "length of the email registered");
      await fixture.registerWith(fixture.email("longpassword"), "p".repeat(128));
    },
  },
  {
    section,
    name: 'login → 200 {"tokenType": "Bearer", token, expiresIn}; the token is HS256 with the claims of docs/authentication.md#what-the-token-holds',
    async run({ api, fixture, options }) {
      const user = await fixture.register("login");
      const reply = await api.post(LOGIN, { json: { email: user.email, password: user.password } });
      expectStatus(reply, 200);
      expectHeader(reply, "content-type", JSON_UTF8);
      const body = objectOf(jsonOf(reply), `${reply.request}: body`);
      expectKeys(body, ["tokenType", "token", "expiresIn"], `${reply.request}: body`);
      expectEqual(body.tokenType, "Bearer", "tokenType");
      const token = body.token as string;
      expectThat(
        typeof token === "string" && /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token),
        "token",
        "three base64url parts",
        token,
      );
      expectEqual(objectOf(decodeHeader(token), "token header").alg, "HS256", "token header alg");
      const claims = objectOf(decodePayload(token), "token payload");
      expectEqual(
        [claims.iss, claims.sub, claims.email, claims.roles],
        [options.jwtIssuer, String(user.id), user.email, [{ authority: "ROLE_USER" }]],
        "claims iss, sub, email, roles",
      );
      expectThat(
        Number.isSafeInteger(body.expiresIn),
        "expiresIn",
        "an integer (milliseconds)",
        body.expiresIn,
      );
      expectEqual(
        ((claims.exp as number) - (claims.iat as number)) * 1000,
        body.expiresIn,
        "exp - iat of the token, in milliseconds, against expiresIn",
      );
    },
  },
  {
    section,
    name: "an unknown email and a wrong password get the same 401 {error}",
    async run({ api, fixture }) {
      const user = await fixture.shared("writer");
      const unknown = await api.post(LOGIN, {
        json: { email: fixture.email("unknown"), password: user.password },
      });
      const wrong = await api.post(LOGIN, { json: { email: user.email, password: `${user.password}!` } });
      expectEqual(expectErrorJson(unknown, 401), expectErrorJson(wrong, 401), "the two messages");
    },
  },
  {
    section,
    name: "GET /api/v1/user → 200 {id, email, createdAt} of the token's user; 403 envelope without a token; 401 {error} for an invalid one",
    async run({ api, fixture }) {
      const user = await fixture.shared("writer");
      const me = expectUserReply(await api.get(USER, { token: user.token }), 200);
      expectEqual([me.id, me.email], [user.id, user.email], "id and email");
      expectEnvelope(await api.get(USER), 403, USER);
      expectErrorJson(await api.get(USER, { token: INVALID_TOKEN }));
      expectEnvelope(await api.delete(USER), 403, USER);
      expectErrorJson(await api.delete(USER, { token: INVALID_TOKEN }));
    },
  },
  {
    section,
    name: "DELETE /api/v1/user → 204; the user's posts are gone (cascade); its token then gets 401 {error}",
    async run({ api, fixture }) {
      const user = await fixture.register("leaving");
      const ids = [
        await fixture.createPost(user),
        await fixture.createPost(user),
        await fixture.createPost(user),
      ];
      expectEmpty(await api.delete(USER, { token: user.token }), 204);
      fixture.forget(user);
      for (const id of ids) expectText(await api.get(`${POSTS}/${id}`), 404, POST_NOT_FOUND);
      const page = expectPageReply(await api.get(`${POSTS}?userId=${user.id}`));
      expectEqual(page.content, [], `the posts of user ${user.id}`);
      expectErrorJson(await api.get(USER, { token: user.token }));
      expectErrorJson(await api.delete(USER, { token: user.token }));
      expectErrorJson(await api.post(LOGIN, { json: { email: user.email, password: user.password } }));
    },
  },
  {
    section,
    name: "successful logins are never counted: more than LOGIN_THROTTLE_MAX in a row all succeed",
    async run({ api, fixture, options }) {
      const user = await fixture.register("often");
      for (let attempt = 0; attempt <= options.loginThrottleMax + 1; attempt += 1) {
        expectStatus(await api.post(LOGIN, { json: { email: user.email, password: user.password } }), 200);
      }
    },
  },
  {
    section,
    name: "past LOGIN_THROTTLE_MAX failures one email gets the 429 envelope with Retry-After, even with the right password; others still log in",
    async run({ api, fixture, options }) {
      const victim = await fixture.register("throttled");
      const other = await fixture.shared("writer");
      const wrong = { email: victim.email, password: `${victim.password}?` };
      for (let failure = 1; failure <= options.loginThrottleMax; failure += 1) {
        expectErrorJson(await api.post(LOGIN, { json: wrong }), 401);
      }
      for (const json of [wrong, { email: victim.email, password: victim.password }]) {
        const refused = await api.post(LOGIN, { json });
        expectEnvelope(refused, 429, LOGIN);
        const retryAfter = refused.headers.get("retry-after");
        expectThat(
          retryAfter !== null && /^[0-9]+$/.test(retryAfter) && Number(retryAfter) > 0,
          `${refused.request}: Retry-After`,
          "a positive number of seconds",
          retryAfter,
        );
      }
      expectStatus(await api.post(LOGIN, { json: { email: other.email, password: other.password } }), 200);
    },
  },
];
