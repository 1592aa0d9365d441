import { createHmac } from "node:crypto";
import { Argon2PasswordHasher, JwtTokenIssuer } from "@posts/adapters-http";
import { MESSAGES } from "@posts/domain";
import { anEmail, aPost, InMemoryAttemptCounter, inMemoryDependencies } from "@posts/domain/testing";
import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectEnvelope, expectErrorJson, JSON_UTF8 } from "../support/expectations.js";
import { TEST_ISSUER, TEST_SECRET, tokenFor } from "../support/mint-token.js";
import { tokenHeader } from "../support/route-requests.js";
import { buildTestApp, type TestApp, useTestApp } from "../support/test-app.js";

describe("users", () => {
  const t = useTestApp();
  const inject = (options: InjectOptions) => t().app.inject(options);
  const register = (payload: unknown) =>
    inject({ method: "POST", url: "/api/v1/user", payload: payload as object });
  const login = (payload: unknown) =>
    inject({ method: "POST", url: "/api/v1/user/login", payload: payload as object });
  const me = (method: "GET" | "DELETE", token?: string) =>
    inject({ method, url: "/api/v1/user", headers: tokenHeader(token) });

  describe("POST /api/v1/user", () => {
    it("registers: 201 {id, email (trimmed, lower-cased), createdAt}, Location ending in /api/v1/user", async () => {
      const email = anEmail("New");
      const response = await register({ email: `  ${email.toUpperCase()} `, password: "password123" });
      expect(response.statusCode).toBe(201);
      expect(response.headers["content-type"]).toBe(JSON_UTF8);
      expect(response.headers.location).toMatch(/^http:\/\/localhost(:\d+)?\/api\/v1\/user$/);
      expect(response.json()).toStrictEqual({
        id: expect.any(Number),
        email: email.toLowerCase(),
        createdAt: "2026-11-22T10:15:30.123",
      });
      expect(response.body).not.toContain("password");
      const stored = await t().deps.users.findByEmail(email.toLowerCase());
      expect(stored?.passwordHash).toBe("fake$password123");
    });

    it("lists every failing field: not an address, password under 8 or over 128", async () => {
      const emailError = { field: "email", message: MESSAGES.emailInvalid };
      const passwordError = { field: "password", message: MESSAGES.passwordInvalid };
      expectEnvelope(await register({}), 400, "/api/v1/user", [emailError, passwordError]);
      expectEnvelope(await register({ email: "no-at-sign", password: "short" }), 400, "/api/v1/user", [
        emailError,
        passwordError,
      ]);
      expectEnvelope(await register({ email: anEmail(), password: "x".repeat(129) }), 400, "/api/v1/user", [
        passwordError,
      ]);
      expectEnvelope(
        await register({ email: `${"a".repeat(250)}@example.com`, password: "password123" }),
        400,
        "/api/v1/user",
        [emailError],
      );
      expectEnvelope(await register({ email: 42, password: 12345678 }), 400, "/api/v1/user", [
        emailError,
        passwordError,
      ]);
    });

    it("answers 409 envelope for an email registered already, compared case-insensitively", async () => {
      const email = anEmail();
      expect((await register({ email, password: "password123" })).statusCode).toBe(201);
      expectEnvelope(
        await register({ email: email.toUpperCase(), password: "password456" }),
        409,
        "/api/v1/user",
      );
    });
  });

  describe("POST /api/v1/user/login", () => {
    it("answers the token: Bearer, a JWT with the contract's claims, expiresIn 86400000", async () => {
      const email = anEmail();
      const registered = (await register({ email, password: "password123" })).json();
      const response = await login({ email: ` ${email.toUpperCase()}`, password: "password123" });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body).toStrictEqual({ tokenType: "Bearer", token: expect.any(String), expiresIn: 86_400_000 });
      expect(response.headers["cache-control"]).toBe("no-store");
      const [header, payload, signature] = body.token.split(".");
      expect(createHmac("sha256", TEST_SECRET).update(`${header}.${payload}`).digest("base64url")).toBe(
        signature,
      );
      const claims = JSON.parse(Buffer.from(payload, "base64url").toString());
      expect(claims).toStrictEqual({
        iss: TEST_ISSUER,
        iat: expect.any(Number),
        exp: claims.iat + 86_400,
        sub: String(registered.id),
        email,
        roles: [{ authority: "ROLE_USER" }],
      });
      // The token works.
      expect((await me("GET", body.token)).json()).toStrictEqual(registered);
    });

    it("answers the same 401 {error} for an unknown email and a wrong password", async () => {
      const email = anEmail();
      await register({ email, password: "password123" });
      const wrong = await login({ email, password: "password124" });
      const unknown = await login({ email: anEmail(), password: "password123" });
      const garbage = await login({ email: 1, password: null });
      for (const response of [wrong, unknown, garbage]) expectErrorJson(response);
      expect(wrong.body).toBe(unknown.body);
      expect(garbage.body).toBe(unknown.body);
    });

    it("answers 400 envelope for a body that is not a JSON object", async () => {
      for (const payload of ["null", "[]", "{"]) {
        expectEnvelope(
          await inject({
            method: "POST",
            url: "/api/v1/user/login",
            headers: { "content-type": "application/json" },
            payload,
          }),
          400,
          "/api/v1/user/login",
        );
      }
    });
  });

  describe("GET and DELETE /api/v1/user", () => {
    it("GET answers the token's user, without the password hash", async () => {
      const user = await t().aUserWithToken();
      const response = await me("GET", user.token);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toStrictEqual({
        id: user.id,
        email: user.email,
        createdAt: "2026-11-22T10:00:00.000",
      });
    });

    it("403 envelope without a token or without ROLE_USER; 401 {error} for an invalid token", async () => {
      const user = await t().aUserWithToken();
      for (const method of ["GET", "DELETE"] as const) {
        expectEnvelope(await me(method), 403, "/api/v1/user");
        expectEnvelope(
          await me(method, tokenFor(user, { roles: [{ authority: "ROLE_ADMIN" }] })),
          403,
          "/api/v1/user",
        );
        expectErrorJson(await me(method, `${user.token}x`));
      }
    });

    it("DELETE removes the user and every post they wrote; then the token's user is gone (401)", async () => {
      const user = await t().aUserWithToken();
      const other = await t().aUserWithToken();
      const mine = await aPost(t().deps.posts, user);
      const theirs = await aPost(t().deps.posts, other);
      const response = await me("DELETE", user.token);
      expect({ status: response.statusCode, body: response.body }).toEqual({ status: 204, body: "" });
      expect(await t().deps.users.findById(user.id)).toBeUndefined();
      expect((await inject({ method: "GET", url: `/api/v1/posts/${mine.id}` })).statusCode).toBe(404);
      expect((await inject({ method: "GET", url: `/api/v1/posts/${theirs.id}` })).statusCode).toBe(200);
      expectErrorJson(await me("GET", user.token));
      expectErrorJson(await me("DELETE", user.token));
    });
  });
});

describe("login throttle", () => {
  it("answers 429 envelope with Retry-After once one email failed `max` times, even for the right password", async () => {
    const { app } = await buildTestApp({ loginThrottle: { max: 3, windowMs: 60_000, maxPerAddress: 100 } });
    const email = anEmail();
    await app.inject({ method: "POST", url: "/api/v1/user", payload: { email, password: "password123" } });
    const attempt = (password: string, remoteAddress = "10.0.0.1", address = email) =>
      app.inject({
        method: "POST",
        url: "/api/v1/user/login",
        remoteAddress,
        payload: { email: address, password },
      });

    // Successes never count.
    for (let i = 0; i < 5; i++) expect((await attempt("password123")).statusCode).toBe(200);
    for (let i = 0; i < 3; i++) expectErrorJson(await attempt("wrong-password"));
    const refused = await attempt("password123", "10.0.0.2", email.toUpperCase());
    expectEnvelope(refused, 429, "/api/v1/user/login");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(60);
    // Another email from the same address is not affected.
    expectErrorJson(await attempt("wrong-password", "10.0.0.1", anEmail()));
    await app.close();
  });

  it("answers 429 once one address failed `maxPerAddress` times, whatever the email; an IPv6 /64 is one address", async () => {
    const { app } = await buildTestApp({ loginThrottle: { max: 100, windowMs: 60_000, maxPerAddress: 2 } });
    const attempt = (remoteAddress: string) =>
      app.inject({
        method: "POST",
        url: "/api/v1/user/login",
        remoteAddress,
        payload: { email: anEmail(), password: "x" },
      });
    expectErrorJson(await attempt("10.0.0.1"));
    expectErrorJson(await attempt("10.0.0.1"));
    expectEnvelope(await attempt("10.0.0.1"), 429, "/api/v1/user/login");
    expectErrorJson(await attempt("10.0.0.2"));

    expectErrorJson(await attempt("2001:db8:1:2::1"));
    expectErrorJson(await attempt("2001:db8:1:2:ffff::9"));
    expectEnvelope(await attempt("2001:db8:1:2::abcd"), 429, "/api/v1/user/login");
    expectErrorJson(await attempt("2001:db8:1:3::1"));
    await app.close();
  });

  it("lets attempts through again once the window has passed on the app's clock", async () => {
    const { app, deps } = await buildTestApp({
      loginThrottle: { max: 1, windowMs: 1000, maxPerAddress: 100 },
    });
    const email = anEmail();
    const attempt = () =>
      app.inject({ method: "POST", url: "/api/v1/user/login", payload: { email, password: "x" } });
    expectErrorJson(await attempt());
    deps.clock.advance(999);
    const refused = await attempt();
    expect({ status: refused.statusCode, retryAfter: refused.headers["retry-after"] }).toEqual({
      status: 429,
      retryAfter: "1",
    });
    deps.clock.advance(1);
    expectErrorJson(await attempt());
    await app.close();
  });

  it("reads both keys of a login in one call of the counter, namespaced, with no email in them", async () => {
    const counter = new InMemoryAttemptCounter();
    const reads: string[][] = [];
    const read = counter.read.bind(counter);
    counter.read = async (keys, now) => {
      reads.push([...keys]);
      return read(keys, now);
    };
    const { app } = await buildTestApp({ attemptCounter: counter });
    const email = anEmail();
    await app.inject({
      method: "POST",
      url: "/api/v1/user/login",
      remoteAddress: "10.9.8.7",
      payload: { email, password: "wrong password" },
    });
    expect(reads).toHaveLength(1);
    expect([...(reads[0] ?? [])].sort()).toEqual([
      "login:address:10.9.8.7",
      expect.stringMatching(/^login:email:[\w-]{43}$/),
    ]);
    expect(reads.join()).not.toContain(email.split("@")[0]);
    await app.close();
  });

  it("answers 503 with Retry-After, not a 401 nor a 200, when the counter fails as the database does", async () => {
    class CounterDown extends Error {}
    const counter = new InMemoryAttemptCounter();
    counter.read = async () => {
      throw new CounterDown("the database is away");
    };
    const { app, aUserWithToken } = await buildTestApp({
      attemptCounter: counter,
      isUnavailable: (error) => error instanceof CounterDown,
    });
    const user = await aUserWithToken();
    const response = await app.inject({
      method: "POST",
      url: "/api/v1/user/login",
      payload: { email: user.email, password: "password123" },
    });
    expectEnvelope(response, 503, "/api/v1/user/login");
    expect(response.headers["retry-after"]).toBeDefined();
    await app.close();
  });

  it("refuses settings that are not positive integers", async () => {
    await expect(buildTestApp({ loginThrottle: { max: 0, windowMs: 1000 } })).rejects.toThrow(RangeError);
  });
});

describe("registration throttle", () => {
  // A per-address limit of 2, so that counting anything else than duplicates would show at once.
  const throttled = () => buildTestApp({ loginThrottle: { max: 100, windowMs: 60_000, maxPerAddress: 2 } });
  const registerFrom = (app: TestApp["app"], remoteAddress: string, payload: object) =>
    app.inject({ method: "POST", url: "/api/v1/user", remoteAddress, payload });

  it("never counts bad input: 100 invalid registrations from one address are all 400, and a valid one is then 201", async () => {
    const { app } = await throttled();
    const statuses = new Set<number>();
    for (let i = 0; i < 100; i++) {
      const payload =
        i % 2 === 0 ? { email: "not an address", password: "password123" } : { email: anEmail() };
      statuses.add((await registerFrom(app, "10.0.0.3", payload)).statusCode);
    }
    expect([...statuses]).toEqual([400]);
    expect(
      (await registerFrom(app, "10.0.0.3", { email: anEmail(), password: "password123" })).statusCode,
    ).toBe(201);
    await app.close();
  });

  it("counts refused duplicates per address: past the limit 429 with Retry-After, even for a free email; bad input stays 400", async () => {
    const { app, deps } = await throttled();
    const taken = anEmail();
    expect((await registerFrom(app, "10.0.0.4", { email: taken, password: "password123" })).statusCode).toBe(
      201,
    );
    for (let i = 0; i < 2; i++) {
      expectEnvelope(
        await registerFrom(app, "10.0.0.4", { email: taken, password: "password123" }),
        409,
        "/api/v1/user",
      );
    }
    const refused = await registerFrom(app, "10.0.0.4", { email: taken, password: "password123" });
    expectEnvelope(refused, 429, "/api/v1/user");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(60);
    // A 201 would tell the client that this email is free.
    const free = anEmail();
    expectEnvelope(
      await registerFrom(app, "10.0.0.4", { email: free, password: "password123" }),
      429,
      "/api/v1/user",
    );
    expect(await deps.users.findByEmail(free)).toBeUndefined();
    expect((await registerFrom(app, "10.0.0.4", { email: free })).statusCode).toBe(400);
    // Another address is not affected, and the window passes.
    expectEnvelope(
      await registerFrom(app, "10.0.0.5", { email: taken, password: "password123" }),
      409,
      "/api/v1/user",
    );
    deps.clock.advance(60_000);
    expect((await registerFrom(app, "10.0.0.4", { email: free, password: "password123" })).statusCode).toBe(
      201,
    );
    await app.close();
  });

  it("validates before anything else: a taken email with a bad password is 400, and not counted", async () => {
    const { app } = await throttled();
    const taken = anEmail();
    await registerFrom(app, "10.0.0.6", { email: taken, password: "password123" });
    for (let i = 0; i < 3; i++) {
      expect((await registerFrom(app, "10.0.0.6", { email: taken, password: "short" })).statusCode).toBe(400);
    }
    expect((await registerFrom(app, "10.0.0.6", { email: taken, password: "password123" })).statusCode).toBe(
      409,
    );
    await app.close();
  });

  it("counts failed logins and refused registrations of one address apart", async () => {
    const { app } = await throttled();
    const taken = anEmail();
    await registerFrom(app, "10.0.0.7", { email: taken, password: "password123" });
    for (let i = 0; i < 2; i++) {
      await app.inject({
        method: "POST",
        url: "/api/v1/user/login",
        remoteAddress: "10.0.0.7",
        payload: { email: taken, password: "wrong password" },
      });
    }
    expect((await registerFrom(app, "10.0.0.7", { email: taken, password: "password123" })).statusCode).toBe(
      409,
    );
    await app.close();
  });
});

describe("passwords and emails that are not well-formed Unicode", () => {
  let testApp: TestApp;
  beforeAll(async () => {
    // The real hasher: it reads a password as UTF-8, where a lone surrogate becomes U+FFFD.
    const hasher = await Argon2PasswordHasher.create({ memoryCost: 1024, timeCost: 1, parallelism: 1 });
    testApp = await buildTestApp({
      deps: {
        ...inMemoryDependencies(),
        tokens: new JwtTokenIssuer({ secret: TEST_SECRET, issuer: TEST_ISSUER }),
        hasher,
      },
    });
  });
  afterAll(() => testApp.app.close());
  const post = (url: string, payload: object) => testApp.app.inject({ method: "POST", url, payload });
  const passwordError = { field: "password", message: MESSAGES.passwordInvalidCharacter };
  const emailError = { field: "email", message: MESSAGES.emailInvalid };

  it("refuses a lone surrogate in a password or an email at registration: 400 envelope", async () => {
    for (const password of ["password\ud800", "password\udfff", "\udc00\ud800password"]) {
      expectEnvelope(await post("/api/v1/user", { email: anEmail(), password }), 400, "/api/v1/user", [
        passwordError,
      ]);
    }
    expectEnvelope(
      await post("/api/v1/user", { email: "wri\ud800ter@example.com", password: "password\ud800" }),
      400,
      "/api/v1/user",
      [emailError, passwordError],
    );
  });

  it("never logs in with a password that differs from the registered one only where a surrogate is lone", async () => {
    const email = anEmail();
    const login = (password: string) => post("/api/v1/user/login", { email, password });
    expect((await post("/api/v1/user", { email, password: "password\ufffd" })).statusCode).toBe(201);
    expect((await login("password\ufffd")).statusCode).toBe(200);
    for (const password of ["password\ud800", "password\udfff"]) {
      expectEnvelope(await login(password), 400, "/api/v1/user/login", [passwordError]);
    }
    expectEnvelope(
      await post("/api/v1/user/login", { email: `${email}\ud800`, password: "password\ufffd" }),
      400,
      "/api/v1/user/login",
      [emailError],
    );
  });
});
