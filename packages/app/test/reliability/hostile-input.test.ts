import { postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { countPosts, insertUserWithToken, storedPost } from "./admin-sql.js";
import { createPost, type SignedUpUser } from "./api-client.js";
import { type InProcessService, startInProcessService } from "./in-process-service.js";
import { useSuiteDatabase } from "./postgres-suite.js";
import { rawExchange, requestHead } from "./raw-http.js";

const BODY_LIMIT = 4096;
// The real default is 30 s; a short one keeps the slow-request tests short.
const REQUEST_TIMEOUT_MS = 1000;
// Node checks request deadlines on an interval (the app sets it from the request timeout).
const SLACK_MS = 1500;
const JSON_UTF8 = "application/json; charset=utf-8";

describeNeeding(await postgresForTests(), "hostile input against the real server and database", () => {
  const database = useSuiteDatabase();
  let service: InProcessService;
  let port: number;
  let writer: SignedUpUser;
  let postId: number;

  const exchange = (request: string | Buffer, giveUpMs = 5000) => rawExchange(port, request, { giveUpMs });
  const post = (
    headers: readonly (readonly [string, string])[],
    body: string | Buffer,
    path = "/api/v1/posts",
  ) =>
    Buffer.concat([
      Buffer.from(
        requestHead(path === "/api/v1/posts" ? "POST" : "PATCH", path, [
          ["Content-Type", "application/json"],
          ["Content-Length", String(Buffer.byteLength(body))],
          ["Connection", "close"],
          ...headers,
        ]),
      ),
      Buffer.from(body),
    ]);

  beforeAll(async () => {
    service = await startInProcessService(
      { DATABASE_URL: database().connectionString, BODY_LIMIT: String(BODY_LIMIT) },
      { timeouts: { requestMs: REQUEST_TIMEOUT_MS } },
    );
    port = Number(new URL(service.url).port);
    writer = await insertUserWithToken(database());
    postId = await createPost(service.url, writer.token, "untouched title", "untouched content");
  });

  afterEach(async () => {
    // Whatever a test sent, the service still answers, and the post it must not touch is intact.
    expect((await fetch(`${service.url}/health`)).status).toBe(200);
    expect(await storedPost(database(), postId)).toEqual({
      title: "untouched title",
      content: "untouched content",
    });
  });

  afterAll(async () => {
    await service?.close();
  });

  it("answers 413 to a body over BODY_LIMIT, by Content-Length or chunked, and writes nothing", async () => {
    const before = await countPosts(database());
    const oversized = JSON.stringify({ title: "too big", content: "x".repeat(BODY_LIMIT) });

    const declared = await exchange(post([["X-AUTH-TOKEN", writer.token]], oversized));
    const patched = await exchange(
      post([["X-AUTH-TOKEN", writer.token]], oversized, `/api/v1/posts/${postId}`),
    );
    // Chunked: the size is only known while reading, so the limit must be enforced while reading.
    const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
    const chunked = await exchange(
      `${requestHead("POST", "/api/v1/posts", [
        ["Content-Type", "application/json"],
        ["Transfer-Encoding", "chunked"],
        ["Connection", "close"],
        ["X-AUTH-TOKEN", writer.token],
      ])}${chunk(oversized.slice(0, 2000))}${chunk(oversized.slice(2000))}0\r\n\r\n`,
    );

    for (const response of [declared, patched, chunked]) {
      expect(response.status, response.body).toBe(413);
      expect(response.headers["content-type"]).toBe(JSON_UTF8);
      expect(JSON.parse(response.body)).toMatchObject({ status: 413, error: "Payload Too Large" });
    }
    expect(await countPosts(database())).toBe(before);
  });

  it("refuses an X-AUTH-TOKEN sent twice, even when both copies are valid, and writes nothing", async () => {
    const before = await countPosts(database());
    const response = await exchange(
      post(
        [
          ["X-AUTH-TOKEN", writer.token],
          ["X-AUTH-TOKEN", writer.token],
        ],
        JSON.stringify({ title: "twice", content: "twice" }),
      ),
    );
    expect(response.status).toBe(401);
    expect(response.headers["content-type"]).toBe(JSON_UTF8);
    expect(Object.keys(JSON.parse(response.body))).toEqual(["error"]);
    expect(await countPosts(database())).toBe(before);
  });

  it("answers a 20 KB X-AUTH-TOKEN with 431 and closes that connection, and a 12 KB one with 401", async () => {
    // Node's header limit (16 KiB) stops the first before any route runs.
    const huge = await exchange(
      requestHead("GET", "/api/v1/posts", [["X-AUTH-TOKEN", "a".repeat(20 * 1024)]]),
    );
    expect(huge.status).toBe(431);
    expect(huge.closedAfterMs).toBeDefined();

    // Under the limit, a long garbage token is just an invalid token.
    const long = await exchange(
      requestHead("GET", "/api/v1/posts", [
        ["X-AUTH-TOKEN", `${"a".repeat(6 * 1024)}.${"b".repeat(6 * 1024)}.c`],
        ["Connection", "close"],
      ]),
    );
    expect(long.status).toBe(401);
    expect(Object.keys(JSON.parse(long.body))).toEqual(["error"]);
  });

  it("ends a request whose headers never finish within the request timeout (408 and close)", async () => {
    const response = await rawExchange(
      port,
      "POST /api/v1/posts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl",
      {
        giveUpMs: REQUEST_TIMEOUT_MS + SLACK_MS + 2000,
        trickle: "ication/json\r\nX-Slow: ".padEnd(200, "z"),
        everyMs: 100,
      },
    );
    expect(response.closedAfterMs, "the connection is still open").toBeDefined();
    expect(response.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
    expect(response.status).toBe(408);
  });

  describe("with the body sent one byte at a time", () => {
    it("ends a request whose body never finishes within the request timeout", async () => {
      const registration = rawExchange(
        port,
        requestHead("POST", "/api/v1/user", [
          ["Content-Type", "application/json"],
          // Under BODY_LIMIT, or the server would answer 413 at once.
          ["Content-Length", "4000"],
        ]),
        {
          giveUpMs: REQUEST_TIMEOUT_MS + SLACK_MS + 2000,
          trickle: `{"email":"${"a".repeat(200)}`,
          everyMs: 100,
        },
      );
      const creation = rawExchange(
        port,
        requestHead("POST", "/api/v1/posts", [
          ["Content-Type", "application/json"],
          ["Content-Length", "4000"],
          ["X-AUTH-TOKEN", writer.token],
        ]),
        {
          giveUpMs: REQUEST_TIMEOUT_MS + SLACK_MS + 2000,
          trickle: `{"title":"${"a".repeat(200)}`,
          everyMs: 100,
        },
      );
      for (const response of await Promise.all([registration, creation])) {
        expect(response.closedAfterMs, "the connection is still open").toBeDefined();
        expect(response.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
      }
    });
  });

  describe("with a body that is not valid UTF-8", () => {
    it("refuses it with the 400 envelope and stores nothing", async () => {
      const before = await countPosts(database());
      const body = Buffer.concat([
        Buffer.from('{"title":"invalid '),
        Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]),
        Buffer.from('","content":"x"}'),
      ]);
      const response = await exchange(post([["X-AUTH-TOKEN", writer.token]], body));
      expect(response.status, response.body).toBe(400);
      expect(JSON.parse(response.body)).toMatchObject({
        status: 400,
        error: "Bad Request",
        path: "/api/v1/posts",
      });
      expect(await countPosts(database())).toBe(before);
    });
  });

  describe("with a request framed two ways, as a proxy and the server could read it differently", () => {
    it("refuses Content-Length with Transfer-Encoding, two Content-Lengths and an unknown Transfer-Encoding with the 400 envelope, closes, and writes nothing", async () => {
      const before = await countPosts(database());
      const body = JSON.stringify({ title: "smuggled", content: "smuggled" });
      const chunked = `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
      // What a front proxy reading the other framing would take for a second request.
      const hidden = requestHead("DELETE", `/api/v1/posts/${postId}`, [["X-AUTH-TOKEN", writer.token]]);
      const head = (framing: readonly (readonly [string, string])[]) =>
        requestHead("POST", "/api/v1/posts", [
          ["Content-Type", "application/json"],
          ["X-AUTH-TOKEN", writer.token],
          ...framing,
        ]);
      const attempts = [
        `${head([
          ["Content-Length", String(Buffer.byteLength(chunked))],
          ["Transfer-Encoding", "chunked"],
        ])}${chunked}${hidden}`,
        `${head([
          ["Content-Length", String(Buffer.byteLength(body))],
          ["Content-Length", "0"],
        ])}${body}${hidden}`,
        `${head([["Transfer-Encoding", "xchunked"]])}${chunked}${hidden}`,
      ];

      for (const attempt of attempts) {
        const response = await exchange(attempt);
        expect(response.status, attempt).toBe(400);
        expect(response.headers["content-type"]).toBe(JSON_UTF8);
        expect(JSON.parse(response.body)).toMatchObject({ status: 400, error: "Bad Request" });
        // Closed after the refusal: nothing after the head is read as another request.
        expect(response.closedAfterMs, "the connection is still open").toBeDefined();
      }
      // The hidden DELETE did not run either: afterEach finds the post intact.
      expect(await countPosts(database())).toBe(before);
    });
  });

  describe("with refusals made before any route runs", () => {
    it("answers 408 and 431 with the generic envelope", async () => {
      const huge = await exchange(
        requestHead("GET", "/api/v1/posts", [["X-AUTH-TOKEN", "a".repeat(20 * 1024)]]),
      );
      const slow = await rawExchange(port, "GET /api/v1/posts HTTP/1.1\r\n", { giveUpMs: 5000 });
      for (const [response, status] of [
        [huge, 431],
        [slow, 408],
      ] as const) {
        expect(response.status).toBe(status);
        expect(response.headers["content-type"]).toBe(JSON_UTF8);
        expect(Object.keys(JSON.parse(response.body)).sort()).toEqual(
          expect.arrayContaining(["error", "path", "status", "timestamp"]),
        );
      }
    });
  });
});
