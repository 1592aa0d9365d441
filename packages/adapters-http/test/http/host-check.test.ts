import { anEmail } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";
import { isValidHost } from "../../src/http/host-check.js";
import { expectEnvelope } from "../support/expectations.js";
import { useTestApp } from "../support/test-app.js";

const BAD_HOSTS = [
  'evil.example"<>',
  "evil.example/x",
  "a b",
  "user@host",
  "host:port",
  "host:",
  "host:65536",
  "[::g]",
  "[::1",
  "é.example",
  "",
];

describe("isValidHost", () => {
  it.each<[string, boolean]>([
    ["localhost", true],
    ["example.com:8080", true],
    ["127.0.0.1:65535", true],
    ["[::1]:8080", true],
    ["[2001:db8::1]", true],
    ["xn--bcher-kva.example", true],
    ["under_score.example", true],
    ["pct%2Dencoded.example", true],
    ...BAD_HOSTS.map((host): [string, boolean] => [host, false]),
    ["[fe80::1%eth0]", false],
    ["pct%2.example", false],
  ])("%j: %s", (host, expected) => {
    expect(isValidHost(host)).toBe(expected);
  });
});

describe("a Host that is not host[:port]", () => {
  const t = useTestApp();
  const register = (headers: Record<string, string>) =>
    t().app.inject({
      method: "POST",
      url: "/api/v1/user",
      headers,
      payload: { email: anEmail(), password: "password123" },
    });

  it("is a 400 envelope on every path, never reflected into Location", async () => {
    for (const host of BAD_HOSTS.filter((bad) => bad !== "")) {
      for (const [method, url] of [
        ["GET", "/api/v1/posts"],
        ["GET", "/nowhere"],
        ["GET", "/health"],
      ] as const) {
        expectEnvelope(await t().app.inject({ method, url, headers: { host } }), 400, url);
      }
      const refused = await register({ host });
      expectEnvelope(refused, 400, "/api/v1/user");
      expect(refused.headers.location).toBeUndefined();
    }
  });

  it("lets a valid host through into Location", async () => {
    for (const host of ["example.com:8080", "[::1]:8080", "127.0.0.1"]) {
      const response = await register({ host });
      expect(response.statusCode).toBe(201);
      expect(response.headers.location).toBe(`http://${host}/api/v1/user`);
    }
  });

  it("refuses a bad host as often as it comes, after more valid hosts than it remembers", async () => {
    const health = (host: string) => t().app.inject({ method: "GET", url: "/health", headers: { host } });
    for (let i = 0; i < 100; i++) expect((await health(`host${i}.example:${8000 + i}`)).statusCode).toBe(200);
    for (let i = 0; i < 3; i++) expectEnvelope(await health('evil.example"<>'), 400, "/health");
    expect((await health("host1.example:8001")).statusCode).toBe(200);
  });

  it("ignores X-Forwarded-Host when no proxy is trusted", async () => {
    const response = await register({ host: "example.com", "x-forwarded-host": 'evil.example"<>' });
    expect(response.statusCode).toBe(201);
    expect(response.headers.location).toBe("http://example.com/api/v1/user");
  });
});

describe("an X-Forwarded-Host that is not host[:port], from a trusted proxy", () => {
  const t = useTestApp({ trustProxy: true });

  it("is a 400 envelope, and a valid one goes into Location", async () => {
    const post = (forwarded: string) =>
      t().app.inject({
        method: "POST",
        url: "/api/v1/user",
        headers: { host: "internal:8080", "x-forwarded-host": forwarded },
        payload: { email: anEmail(), password: "password123" },
      });
    expectEnvelope(await post('evil.example"<>'), 400, "/api/v1/user");
    expectEnvelope(await post("good.example, evil.example<>"), 400, "/api/v1/user");
    const response = await post("public.example");
    expect(response.statusCode).toBe(201);
    expect(response.headers.location).toBe("http://public.example/api/v1/user");
  });
});
