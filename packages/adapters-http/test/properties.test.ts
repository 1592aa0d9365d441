import { aPost } from "@posts/domain/testing";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { useTestApp } from "./support/test-app.js";

// Any JSON value, with the property names the routes read mixed in so that bodies often reach the domain.
const jsonBody = fc.oneof(
  fc.json(),
  fc
    .record(
      {
        title: fc.oneof(fc.string(), fc.jsonValue(), fc.constant(null), fc.string({ unit: "binary" })),
        content: fc.oneof(fc.string(), fc.jsonValue(), fc.constant(null), fc.string({ unit: "binary" })),
        email: fc.oneof(fc.emailAddress(), fc.string(), fc.jsonValue()),
        password: fc.oneof(fc.string(), fc.jsonValue()),
      },
      { requiredKeys: [] },
    )
    .map((body) => JSON.stringify(body)),
);

describe("properties", () => {
  const t = useTestApp({ loginThrottle: { max: 1_000_000, windowMs: 60_000 } });

  it("random JSON bodies to POST and PATCH posts never give 5xx", async () => {
    const user = await t().aUserWithToken();
    const post = await aPost(t().deps.posts, user);
    await fc.assert(
      fc.asyncProperty(jsonBody, fc.constantFrom("POST", "PATCH"), async (payload, method) => {
        const response = await t().app.inject({
          method,
          url: method === "POST" ? "/api/v1/posts" : `/api/v1/posts/${post.id}`,
          headers: { "x-auth-token": user.token, "content-type": "application/json" },
          payload,
        });
        const expected = method === "POST" ? 201 : 200;
        expect(
          response.statusCode === expected || (response.statusCode >= 400 && response.statusCode < 500),
        ).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("random JSON bodies to register and log in never give 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(
        jsonBody,
        fc.constantFrom("/api/v1/user", "/api/v1/user/login"),
        async (payload, url) => {
          const response = await t().app.inject({
            method: "POST",
            url,
            headers: { "content-type": "application/json" },
            payload,
          });
          expect(response.statusCode).toBeLessThan(500);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("random paths, query strings and header values never give 5xx", async () => {
    const segment = fc.oneof(
      fc.constantFrom(
        "api",
        "v1",
        "posts",
        "user",
        "login",
        "1",
        "99999999999999999999",
        "%",
        "%zz",
        "..",
        "",
      ),
      fc.string(),
      fc.webSegment(),
    );
    const path = fc
      .array(segment, { maxLength: 5 })
      .map((parts) => `/${parts.map(encodeURIComponentLoosely).join("/")}`);
    const query = fc.webQueryParameters();
    const headerValue = fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    });
    await fc.assert(
      fc.asyncProperty(
        path,
        query,
        fc.constantFrom("GET", "POST", "PATCH", "DELETE", "PUT", "HEAD", "OPTIONS"),
        headerValue,
        headerValue,
        async (url, search, method, token, contentType) => {
          const response = await t().app.inject({
            method,
            url: search === "" ? url : `${url}?${search}`,
            headers: { "x-auth-token": token, "content-type": contentType },
            payload: method === "GET" || method === "HEAD" ? undefined : "{}",
          });
          expect(response.statusCode).toBeLessThan(500);
        },
      ),
      { numRuns: 300 },
    );
  });
});

// Keeps some raw "%" so the router also sees undecodable paths.
function encodeURIComponentLoosely(segment: string): string {
  return segment.startsWith("%") ? segment : encodeURIComponent(segment);
}
