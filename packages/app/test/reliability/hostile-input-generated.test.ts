import { mkdtemp, rm } from "node:fs/promises";
import { STATUS_CODES } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JwtTokenIssuer } from "@posts/adapters-http";
import { openTestDatabase, postgresForTests, type TestDatabase } from "@posts/adapters-postgres/testing";
import { claimsFor } from "@posts/domain";
import { describeNeeding } from "@posts/domain/testing/vitest";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ListeningService,
  runCommand,
  startService,
  TEST_JWT_SECRET,
} from "../support/service-process.js";
import { createPost, type SignedUpUser, signUp } from "./api-client.js";
import { type HostileRequest, type OpenApiDocument, requestsFrom } from "./openapi-arbitraries.js";
import { type RawResponse, rawExchange, requestHead } from "./raw-http.js";

// Small, so that bodies near and over the limit cost little to generate and send.
const BODY_LIMIT = 64 * 1024;
// The bound on the first byte of every answer: a refusal is decided at once, and what is accepted
// touches a few rows.
const ANSWER_WITHIN_MS = 1000;
// Fixed: a failure names its seed and path, and the same run replays it.
const SEED = 0x5eed;
const NUM_RUNS = 250;
// Migrating a fresh database, starting the process and seeding it, on a busy machine.
const START_WITHIN_MS = 180_000;
const JSON_UTF8 = "application/json; charset=utf-8";
const TEXT_UTF8 = "text/plain; charset=utf-8";
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}$/;
const ENVELOPE_KEYS = new Set(["timestamp", "status", "error", "path", "message", "errors"]);
// What an answer must never show of the service's insides: stack frames, SQL, driver errors.
const INTERNALS =
  /\bat [\w$.<>]+ \(|node_modules|\.ts:\d+|\bSELECT\b|\bINSERT INTO\b|SQLSTATE|syntax error at|pglite|kysely/i;

/** What a refused request must leave as it was: the posts, the end of the change feed, the user. */
interface Snapshot {
  readonly page: string;
  readonly feedEnd: number;
  readonly me: string;
}

/**
 * Generated requests to every operation of the service's own OpenAPI document, as a hostile
 * client would send them, against the real process started by `start`: no answer is a 5xx or
 * slower than a second, a refusal has a documented shape and changes nothing, and the process
 * is alive at the end with nothing logged as an error. `cleanUp` runs once the process has stopped.
 */
function hostileRequestsAgainst(start: () => Promise<ListeningService>, cleanUp: () => Promise<void>) {
  let service: ListeningService;
  let writer: SignedUpUser;
  let requests: fc.Arbitrary<HostileRequest>;
  let feedEnd = 0;

  beforeAll(async () => {
    service = await start();
    writer = await signUp(service.url);
    const postIds = [
      await createPost(service.url, writer.token, "seeded one", "첫 번째"),
      await createPost(service.url, writer.token, "seeded two", "두 번째"),
      await createPost(service.url, writer.token, "seeded three", "세 번째"),
    ];
    const entityTags = await Promise.all(
      postIds.map(async (id) => (await fetch(`${service.url}/api/v1/posts/${id}`)).headers.get("etag") ?? ""),
    );
    const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as OpenApiDocument;
    // Weighted so that most requests pass authentication and reach what lies behind it.
    const hostileTokens = fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 3 },
      { arbitrary: fc.constantFrom(...(await hostileTokensFor(writer))), weight: 2 },
      {
        arbitrary: fc
          .string({ unit: "grapheme-ascii", maxLength: 80 })
          .map((text) => text.replace(/[\r\n]/g, "")),
        weight: 1,
      },
    );
    const withValidToken = fc.oneof(
      { arbitrary: hostileTokens, weight: 1 },
      { arbitrary: fc.constant(writer.token), weight: 1 },
    );
    requests = requestsFrom(document, ({ method }) => ({
      // A valid token on a DELETE would take the seeded state away for the rest of the run.
      tokens: method === "delete" ? hostileTokens : withValidToken,
      entityTags,
      postIds,
    }));
  }, START_WITHIN_MS);

  afterAll(async () => {
    await service?.stop();
    await cleanUp();
  });

  const readFeedEnd = async (): Promise<number> => {
    for (;;) {
      const feed = await fetch(`${service.url}/api/v1/posts/events?after=${feedEnd}&limit=1000`);
      const { events, next } = (await feed.json()) as { events: unknown[]; next: number };
      if (events.length === 0) return feedEnd;
      feedEnd = next;
    }
  };

  // Events are numbered shortly after their change commits (docs/change-events.md#how-numbers-are-given):
  // after an accepted write, the feed is given time to show it before the next comparison. A loop,
  // not expect.poll: not every accepted write adds an event, so running out of time is no failure.
  const feedShowsMoreThan = async (end: number): Promise<void> => {
    const deadline = performance.now() + 2 * ANSWER_WITHIN_MS;
    while ((await readFeedEnd()) === end && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  const snapshot = async (): Promise<Snapshot> => {
    const page = await (await fetch(`${service.url}/api/v1/posts?size=100`)).text();
    const me = await (
      await fetch(`${service.url}/api/v1/user`, { headers: { "x-auth-token": writer.token } })
    ).text();
    return { page, feedEnd: await readFeedEnd(), me };
  };

  it(`answers ${NUM_RUNS} generated requests under 500 within ${ANSWER_WITHIN_MS} ms, refusals documented and changing nothing`, async () => {
    // The first state compared is the seeded one whole: the three creations' events numbered.
    await expect.poll(readFeedEnd, { timeout: 10_000 }).toBe(3);
    let before = await snapshot();
    await fc.assert(
      fc.asyncProperty(requests, async (request) => {
        const head = requestHead(request.method, request.target, request.headers);
        const response = await rawExchange(
          service.port,
          request.body === undefined ? head : Buffer.concat([Buffer.from(head), request.body]),
          // A change-feed stream stays open: the first byte is what is timed.
          { giveUpMs: 2 * ANSWER_WITHIN_MS },
        );
        const what = describeRequest(request, response);
        expect(response.status, what).toBeDefined();
        expect(response.status, what).toBeLessThan(500);
        expect(response.answeredAfterMs, what).toBeLessThan(ANSWER_WITHIN_MS);
        const status = response.status ?? 0;
        const acceptedWrite =
          status < 300 && request.target.startsWith("/api/v1/posts") && request.method !== "GET";
        if (acceptedWrite) await feedShowsMoreThan(before.feedEnd);
        const after = await snapshot();
        expectExactWhereDocumented(request, status, what);
        if (status >= 400) {
          expectDocumentedRefusal(request, response, what);
          expect(after, `${what}\nchanged the state`).toEqual(before);
        }
        before = after;
      }),
      { seed: SEED, numRuns: NUM_RUNS, endOnFailure: true },
    );

    expect((await fetch(`${service.url}/health`)).status).toBe(200);
    expect(service.child.exitCode, service.output()).toBeNull();
    const errors = service.logs.filter((line) => (line.level ?? 0) >= 50);
    expect(errors, service.output()).toEqual([]);
  });
}

/** Tokens a client might send that must not authenticate: malformed, unsigned, expired, for nobody. */
async function hostileTokensFor(user: SignedUpUser): Promise<string[]> {
  const [header = "", payload = "", signature = ""] = user.token.split(".");
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Record<string, unknown>;
  const issuer = (now = Date.now) =>
    new JwtTokenIssuer({ secret: TEST_JWT_SECRET, issuer: String(claims.iss), now });
  const twoDaysAgo = () => Date.now() - 2 * 86_400_000;
  return [
    "",
    "not-a-jwt",
    "a.b.c",
    `Bearer ${user.token}`,
    `${user.token}x`,
    user.token.slice(0, -3),
    `${user.token}, ${user.token}`,
    `${part({ alg: "none", typ: "JWT" })}.${payload}.`,
    `${part({ alg: "HS512", typ: "JWT" })}.${payload}.${signature}`,
    `${header}.${part({ ...claims, sub: "1", roles: [{ authority: "ROLE_ADMIN" }] })}.${signature}`,
    (await issuer(twoDaysAgo).issue(claimsFor(user))).token,
    (await issuer().issue({ ...claimsFor(user), roles: [] })).token,
    (await issuer().issue(claimsFor({ id: 2 ** 31 - 1, email: "nobody@example.com" }))).token,
  ];
}

/** Fails unless a 4xx is one of the shapes docs/errors.md#every-status lists, and shows nothing inside. */
function expectDocumentedRefusal(request: HostileRequest, response: RawResponse, what: string): void {
  const status = response.status ?? 0;
  expect(response.body, what).not.toMatch(INTERNALS);
  const type = response.headers["content-type"];
  if (type === TEXT_UTF8) {
    expect([401, 404], what).toContain(status);
    return;
  }
  if (type === undefined && response.body === "") {
    expect([status, request.method], `${what}\nan empty refusal`).toEqual([400, "PATCH"]);
    return;
  }
  expect(type, what).toBe(JSON_UTF8);
  const body = JSON.parse(response.body) as Record<string, unknown>;
  if (Object.keys(body).join() === "error") {
    expect(status, `${what}\n{error} is a 401's`).toBe(401);
    return;
  }
  expect(
    Object.keys(body).filter((key) => !ENVELOPE_KEYS.has(key)),
    what,
  ).toEqual([]);
  expect([body.status, body.error], what).toEqual([status, STATUS_CODES[status]]);
  expect(String(body.timestamp), what).toMatch(TIMESTAMP);
  expect(typeof body.path, what).toBe("string");
  expect(typeof body.message === "string" || Array.isArray(body.errors), what).toBe(true);
  if (status === 405) expect(response.headers.allow, what).toBeTruthy();
  if (status === 429) expect(response.headers["retry-after"], what).toMatch(/^\d+$/);
}

/** Hosts that are not a valid `host[:port]` (docs/errors.md#every-status). */
const INVALID_HOSTS = new Set(["127.0.0.1:99999", "[::1", "a b"]);

/**
 * Where docs/errors.md#every-status decides the answer whatever else the request holds: an
 * invalid Host is a 400 on any path (unless Node refused the head first, 431), and a body in
 * another charset than UTF-8 or with a Content-Encoding other than identity is never taken.
 */
function expectExactWhereDocumented(request: HostileRequest, status: number, what: string): void {
  const header = (name: string) => request.headers.find(([key]) => key.toLowerCase() === name)?.[1];
  if (INVALID_HOSTS.has(header("host") ?? "")) expect([400, 431], what).toContain(status);
  if (request.body === undefined) return;
  const encoding = header("content-encoding");
  const charset = /charset=([^;]*)/i
    .exec(header("content-type") ?? "")?.[1]
    ?.trim()
    .toLowerCase();
  if ((encoding !== undefined && encoding !== "identity") || (charset !== undefined && charset !== "utf-8")) {
    expect(
      status,
      `${what}
was taken`,
    ).toBeGreaterThanOrEqual(400);
  }
}

function describeRequest(request: HostileRequest, response: RawResponse): string {
  const headers = request.headers.map(([name, value]) => `${name}: ${shorten(value)}`).join("\n");
  const body = request.body === undefined ? "" : `\n\n${shorten(request.body.toString("utf8"))}`;
  return `${request.method} ${shorten(request.target)}\n${headers}${body}\n→ ${response.status} after ${Math.round(response.answeredAfterMs ?? -1)} ms: ${shorten(response.body)}`;
}

function shorten(text: string): string {
  return text.length > 160 ? `${text.slice(0, 160)}… (${text.length} characters)` : text;
}

describe("generated hostile requests against the real process on the embedded database", () => {
  let dataDir: string | undefined;
  hostileRequestsAgainst(
    async () => {
      dataDir = await mkdtemp(join(tmpdir(), "posts-hostile-"));
      // The first open of a directory initialises PGlite, which on a busy machine outlasts the
      // wait for the listening line: `migrate` does it first, as `pnpm start` would on a second run.
      const migrated = await runCommand(["migrate"], { DATA_DIR: dataDir });
      if (migrated.code !== 0) throw new Error(`migrate exited ${migrated.code}\n${migrated.stderr}`);
      return startService({ DATA_DIR: dataDir, JWT_SECRET: TEST_JWT_SECRET, BODY_LIMIT: String(BODY_LIMIT) });
    },
    async () => {
      if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
    },
  );
});

describeNeeding(
  await postgresForTests(),
  "generated hostile requests against the real process on PostgreSQL",
  () => {
    let database: TestDatabase | undefined;
    hostileRequestsAgainst(
      async () => {
        database = await openTestDatabase("postgres", { migrate: false });
        return startService({
          DATABASE_URL: database.connectionString ?? "",
          JWT_SECRET: TEST_JWT_SECRET,
          BODY_LIMIT: String(BODY_LIMIT),
        });
      },
      async () => {
        await database?.close();
      },
    );
  },
);
