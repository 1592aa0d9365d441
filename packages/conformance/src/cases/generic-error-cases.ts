import { STATUS_CODES } from "node:http";
import { gzipSync } from "node:zlib";
import { type LargeBodyExchange, sendLargeBody } from "../http/send-large-body.js";
import { sendRaw } from "../http/send-raw.js";
import type { CaseContext, ConformanceCase } from "../runner/conformance-case.js";
import { jsonOfSize } from "../support/bodies.js";
import {
  expectEnvelope,
  expectEqual,
  expectStatus,
  expectThat,
  JSON_UTF8,
  jsonOf,
  objectOf,
  show,
  TIMESTAMP,
} from "../support/expectations.js";
import { LOGIN, POSTS, USER } from "../support/fixture.js";
import { INVALID_TOKEN } from "../support/token-forge.js";

const section = "docs/errors.md";

/** Fails unless a 405 reply's Allow lists every method in `allowed` and not the one refused. */
function expectAllow(
  reply: { request: string; headers: Headers },
  method: string,
  allowed: readonly string[],
): void {
  const header = reply.headers.get("allow");
  const methods = (header ?? "").split(",").map((name) => name.trim().toUpperCase());
  expectThat(
    header !== null && allowed.every((name) => methods.includes(name)) && !methods.includes(method),
    `${reply.request}: Allow`,
    `${allowed.join(", ")} (and not ${method})`,
    header,
  );
}

/** The whole answer arrived, with `status`, JSON, and a body of the expected kind. */
function expectEarlyAnswer(
  exchange: LargeBodyExchange,
  status: number,
  body: "envelope" | "error",
  path: string,
  attempt: string,
) {
  const what = `${attempt}: an early ${status} while the client keeps sending (${exchange.bytesSent} body bytes sent)`;
  expectThat(
    exchange.complete,
    what,
    "the whole answer: status line, headers and body, then no reset",
    exchange.status === undefined
      ? `no answer (${exchange.error ?? "connection closed"})`
      : `${exchange.status} with ${Buffer.byteLength(exchange.body)} body bytes, then ${exchange.error ?? "closed"}`,
  );
  expectEqual(exchange.status, status, `${what}: status`);
  expectEqual(exchange.headers["content-type"]?.toLowerCase(), JSON_UTF8, `${what}: content-type`);
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(exchange.body) as Record<string, unknown>;
  } catch {
    throw new Error(`${what}: the body is not JSON: ${show(exchange.body)}`);
  }
  if (body === "error") {
    expectEqual(Object.keys(parsed), ["error"], `${what}: body properties`);
    return;
  }
  expectEqual(
    [parsed.status, parsed.error, parsed.path],
    [status, STATUS_CODES[status], path],
    `${what}: envelope`,
  );
  expectThat(
    TIMESTAMP.test(String(parsed.timestamp)),
    `${what}: envelope.timestamp`,
    "yyyy-MM-ddTHH:mm:ss.SSS",
    parsed.timestamp,
  );
}

// The answer can be lost to a reset only when the server closes at the wrong moment: a race,
// so each exchange is tried a few times.
const EXCHANGES = 3;

/** The case: a request with a body of twice the limit, refused before its body is read. */
function earlyAnswer(
  name: string,
  status: number,
  body: "envelope" | "error",
  request: (
    context: CaseContext,
  ) => Promise<{ method: string; path: string; headers: Record<string, string> }>,
): ConformanceCase {
  return {
    section,
    name: `an early ${status} reaches a client that sends 2 × BODY_LIMIT without Expect: 100-continue (${name}; ${EXCHANGES} tries)`,
    async run(context) {
      const { method, path, headers } = await request(context);
      for (let exchange = 1; exchange <= EXCHANGES; exchange += 1) {
        const answer = await sendLargeBody(context.options.baseUrl, {
          method,
          path,
          headers,
          bodyBytes: 2 * context.options.bodyLimit,
        });
        expectEarlyAnswer(answer, status, body, path, `try ${exchange} of ${EXCHANGES}`);
      }
    },
  };
}

/**
 * docs/errors.md: the envelopes of generic errors, 404/405/415/413 (charsets, encodings and
 * `Expect` too), the 400 of a bad `Host`, and answers given before the body is read.
 */
export const genericErrorCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "a path that does not exist → 404 envelope Not Found, path without the query string",
    async run({ api }) {
      expectEnvelope(await api.get("/api/v1/does-not-exist?x=1&y=2"), 404, "/api/v1/does-not-exist");
      expectEnvelope(await api.post("/api/v2/posts", { json: {} }), 404, "/api/v2/posts");
      expectEnvelope(await api.get(`${POSTS}/1/comments`), 404, `${POSTS}/1/comments`);
      expectEnvelope(await api.get("/api/v1/postsx"), 404, "/api/v1/postsx");
    },
  },
  {
    section,
    name: "404 and 405 are decided before the body is read: a malformed JSON body does not turn them into 400",
    async run({ api }) {
      const options = { contentType: "application/json", body: '{"title": ' };
      expectEnvelope(await api.post("/api/v1/does-not-exist", options), 404, "/api/v1/does-not-exist");
      const refused = await api.request("PUT", POSTS, options);
      expectEnvelope(refused, 405, POSTS);
      expectAllow(refused, "PUT", ["GET", "POST"]);
    },
  },
  {
    section,
    name: "a path that exists with a method it has no handler for → 405 envelope Method Not Allowed with Allow",
    async run({ api }) {
      const cases: readonly [string, string, readonly string[]][] = [
        ["PUT", POSTS, ["GET", "POST"]],
        ["DELETE", POSTS, ["GET", "POST"]],
        ["PUT", `${POSTS}/1`, ["GET", "PATCH", "DELETE"]],
        ["POST", `${POSTS}/1`, ["GET", "PATCH", "DELETE"]],
        ["PATCH", USER, ["GET", "POST", "DELETE"]],
        ["GET", LOGIN, ["POST"]],
      ];
      for (const [method, path, allowed] of cases) {
        const reply = await api.request(method, `${path}?q=1`, method === "GET" ? {} : { json: {} });
        expectEnvelope(reply, 405, path);
        expectAllow(reply, method, allowed);
      }
    },
  },
  {
    section,
    name: "a protected endpoint without a token → 403 envelope Forbidden",
    async run({ api }) {
      expectEnvelope(await api.post(`${POSTS}?x=1`, { json: { title: "t", content: "c" } }), 403, POSTS);
      expectEnvelope(await api.patch(`${POSTS}/1`, { json: { title: "t" } }), 403, `${POSTS}/1`);
      expectEnvelope(await api.delete(`${POSTS}/1`), 403, `${POSTS}/1`);
    },
  },
  {
    section,
    name: "a body that is not JSON → 415 envelope Unsupported Media Type (on the user endpoints too)",
    async run({ api, fixture }) {
      const email = fixture.email("unsupported");
      const body = JSON.stringify({ email, password: "long enough" });
      expectEnvelope(await api.post(USER, { contentType: "text/plain", body }), 415, USER);
      expectEnvelope(await api.post(LOGIN, { contentType: "text/plain", body }), 415, LOGIN);
    },
  },
  {
    section,
    name: "a body over BODY_LIMIT → 413 envelope Payload Too Large (on the user endpoints too)",
    async run({ api, options }) {
      const body = jsonOfSize(options.bodyLimit + 1);
      expectEnvelope(await api.post(USER, { contentType: "application/json", body }), 413, USER);
      expectEnvelope(await api.post(LOGIN, { contentType: "application/json", body }), 413, LOGIN);
    },
  },
  {
    section,
    name: "JSON in another charset than UTF-8, or a Content-Encoding the service does not decode → 415 envelope, nothing stored",
    async run({ api, fixture }) {
      const writer = await fixture.register("charset");
      const body = JSON.stringify({ title: "제목", content: "본문" });
      for (const contentType of ["application/json; charset=latin1", "application/json; charset=utf-16"]) {
        expectEnvelope(await api.post(POSTS, { token: writer.token, contentType, body }), 415, POSTS);
        const credentials = JSON.stringify({ email: fixture.email("charset"), password: fixture.password() });
        expectEnvelope(await api.post(USER, { contentType, body: credentials }), 415, USER);
      }
      const gzipped = await api.post(POSTS, {
        token: writer.token,
        contentType: "application/json",
        headers: { "content-encoding": "gzip" },
        body: new Uint8Array(gzipSync(body)),
      });
      expectEnvelope(gzipped, 415, POSTS);
      const page = objectOf(jsonOf(await api.get(`${POSTS}?userId=${writer.id}`)), "the writer's page");
      expectEqual(page.content, [], "the writer's posts after the refusals: nothing stored");
      const utf8 = await api.post(POSTS, {
        token: writer.token,
        contentType: "application/json; charset=UTF-8",
        body,
      });
      expectStatus(utf8, 201);
    },
  },
  {
    section,
    name: "Expect: 100-continue with a Content-Length over BODY_LIMIT → the 413 envelope comes instead of 100 Continue",
    async run({ options, fixture }) {
      const writer = await fixture.shared("writer");
      const reply = await sendRaw(options.baseUrl, {
        method: "POST",
        path: POSTS,
        headers: {
          "Content-Type": "application/json",
          "X-AUTH-TOKEN": writer.token,
          Expect: "100-continue",
          "Content-Length": String(options.bodyLimit + 1),
        },
      });
      expectEqual(reply.interim, [], `${reply.request}: interim answers before the final one`);
      expectEnvelope(reply, 413, POSTS);
    },
  },
  {
    section,
    name: "a Host that is not host[:port] → 400 envelope on every path, never written into Location or Link",
    async run({ options, fixture }) {
      const host = 'evil.example"<>';
      for (const path of [`${POSTS}?size=1`, "/api/v1/does-not-exist", USER]) {
        const reply = await sendRaw(options.baseUrl, { method: "GET", path, headers: { Host: host } });
        expectEnvelope(reply, 400, path.split("?")[0] ?? path);
        expectEqual(reply.headers.get("link"), null, `${reply.request}: Link`);
      }
      const registered = await sendRaw(options.baseUrl, {
        method: "POST",
        path: USER,
        headers: { Host: host, "Content-Type": "application/json" },
        body: JSON.stringify({ email: fixture.email("host"), password: fixture.password() }),
      });
      expectEnvelope(registered, 400, USER);
      expectEqual(registered.headers.get("location"), null, `${registered.request}: Location`);
    },
  },
  earlyAnswer("invalid token", 401, "error", async () => ({
    method: "POST",
    path: POSTS,
    headers: { "Content-Type": "application/json", "X-AUTH-TOKEN": INVALID_TOKEN },
  })),
  earlyAnswer("no token", 403, "envelope", async () => ({
    method: "POST",
    path: POSTS,
    headers: { "Content-Type": "application/json" },
  })),
  earlyAnswer("body over the limit", 413, "envelope", async ({ fixture }) => ({
    method: "POST",
    path: POSTS,
    headers: { "Content-Type": "application/json", "X-AUTH-TOKEN": (await fixture.shared("writer")).token },
  })),
  earlyAnswer("not JSON", 415, "envelope", async ({ fixture }) => ({
    method: "POST",
    path: POSTS,
    headers: { "Content-Type": "text/plain", "X-AUTH-TOKEN": (await fixture.shared("writer")).token },
  })),
  earlyAnswer("no token, the client sending Connection: close", 403, "envelope", async () => ({
    method: "POST",
    path: POSTS,
    headers: { "Content-Type": "application/json", Connection: "close" },
  })),
  // Not JSON: whether a JSON body over the limit to a path that does not exist is 404 or 413 is
  // not the contract's to say, and either is an early answer.
  earlyAnswer("no such path", 404, "envelope", async () => ({
    method: "POST",
    path: "/api/v1/does-not-exist",
    headers: { "Content-Type": "text/plain" },
  })),
  earlyAnswer("method not allowed", 405, "envelope", async () => ({
    method: "PUT",
    path: POSTS,
    headers: { "Content-Type": "text/plain" },
  })),
];
