import { buildHttpApp, JwtTokenIssuer } from "@posts/adapters-http";
import { PostgresPostRepository, type PostgresPostRepositoryOptions } from "@posts/adapters-postgres";
import { openTestDatabase, postgresForTests, type TestDatabase } from "@posts/adapters-postgres/testing";
import { claimsFor, type Post, systemClock } from "@posts/domain";
import { aUser, FakePasswordHasher } from "@posts/domain/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it } from "vitest";

// The one suite that holds the wire form of a post (docs/posts.md#a-post-on-the-wire) to a single
// definition: for the same posts, GET by id, every list page, every search page and PATCH write
// each post with the same bytes, in every time zone below, with the post cache off, reading pages
// in full, and reading them through the cache both cold and warm; and those bytes are what an
// independent reference (JSON.stringify of the contract's fields in its order, timestamps from
// Intl) writes.

const SECRET = "wire-format-test-secret-0123456789abcdef";
const ISSUER = "wire-format-test";
const ZONES = ["UTC", "Asia/Seoul", "America/New_York"] as const;

type FastifyInstance = Awaited<ReturnType<typeof buildHttpApp>>;

/** How the post repository keeps posts, from none to pages read through a cache already filled. */
const CACHES = {
  off: {},
  "in full (adaptive, as it starts)": { cache: { maxBytes: 16 * 1024 * 1024 } },
  "through the cache, cold": { cache: { maxBytes: 16 * 1024 * 1024, alwaysThroughCache: true } },
  "through the cache, warm": { cache: { maxBytes: 16 * 1024 * 1024, alwaysThroughCache: true } },
} as const satisfies Record<string, PostgresPostRepositoryOptions>;
type CacheMode = keyof typeof CACHES;

/** Texts whose JSON needs escapes, or that are not ASCII. */
const TITLES = [
  "plain ascii",
  'quotes " and \\ backslashes / slashes',
  "control \u0001\u001f characters, tab\tand newline\n",
  "line separators \u2028 and \u2029",
  "안녕하세요 게시판",
  "emoji 😀👍🏽 and a family 👨‍👩‍👧‍👦",
  "</script><script>alert(1)</script>",
  "combining cafe\u0301 and ideographic\u3000space",
];

/** Instants at the edges of days, years and daylight saving time in the zones above. */
const INSTANTS = [
  "2026-03-08T06:59:59.999Z", // New York: the last millisecond before clocks spring forward
  "2026-03-08T07:00:00.000Z", // New York: 03:00 EDT
  "2026-11-01T05:59:59.999Z", // New York: 01:59:59.999 EDT, the first time
  "2026-11-01T06:00:00.000Z", // New York: 01:00 EST, the second time
  "2026-12-31T14:59:59.999Z", // Seoul: 23:59:59.999 on New Year's Eve
  "2026-12-31T15:00:00.000Z", // Seoul: midnight, 2027
  "2027-01-01T00:00:00.007Z", // UTC: a new year, seven milliseconds in
  "2024-02-29T23:59:59.001Z", // a leap day
].map((text) => new Date(text));

/** `yyyy-MM-ddTHH:mm:ss.SSS` of `instant` in `timeZone`, from a fresh Intl formatter (shares nothing with the service's). */
function reference(timeZone: string, instant: Date): string {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    fractionalSecondDigits: 3,
    hourCycle: "h23",
  }).formatToParts(instant);
  const field = (type: Intl.DateTimeFormatPartTypes) => parts.find((part) => part.type === type)?.value;
  return `${field("year")}-${field("month")}-${field("day")}T${field("hour")}:${field("minute")}:${field("second")}.${field("fractionalSecond")}`;
}

/** The contract's wire form of `post` in `timeZone`, written by JSON.stringify in the contract's order. */
function expectedJson(post: Post, timeZone: string): string {
  return JSON.stringify({
    id: post.id,
    title: post.title,
    content: post.content,
    createdAt: reference(timeZone, post.createdAt),
    updatedAt: reference(timeZone, post.updatedAt),
    user: { id: post.author.id, email: post.author.email },
  });
}

interface PageBody {
  readonly content: readonly { readonly id: number }[];
  readonly size: number;
  readonly nextCursor: string | null;
}

describeNeeding(await postgresForTests(), "the wire form of a post, the same bytes everywhere", () => {
  let database: TestDatabase;
  let author: { id: number; email: string };
  let token: string;

  beforeAll(async () => {
    database = await openTestDatabase("postgres");
    author = await aUser(database.users, { email: "wire-format@example.com" });
    const other = await aUser(database.users, { email: "other-author@example.com" });
    token = (await new JwtTokenIssuer({ secret: SECRET, issuer: ISSUER }).issue(claimsFor(author))).token;
    for (const [i, title] of TITLES.entries()) {
      const createdAt = INSTANTS[i % INSTANTS.length] as Date;
      const writer = i % 3 === 0 ? other : author;
      const post = await database.posts.create({
        authorId: writer.id,
        title,
        content: `${title} — body ${i}\r\n${"Lorem ipsum ".repeat(i + 1)}`,
        createdAt,
      });
      if (post === undefined) throw new Error("the author is gone");
    }
  }, 60_000);
  afterAll(async () => {
    await database?.close();
  });

  /** The app of one zone over a post repository kept as `mode` says. */
  async function appFor(
    timeZone: string,
    mode: CacheMode,
  ): Promise<{ app: FastifyInstance; posts: PostgresPostRepository }> {
    const posts = new PostgresPostRepository(database.db, CACHES[mode]);
    const app = await buildHttpApp({
      deps: {
        posts,
        users: database.users,
        clock: systemClock,
        hasher: new FakePasswordHasher(),
        tokens: new JwtTokenIssuer({ secret: SECRET, issuer: ISSUER }),
      },
      jwt: { secret: SECRET, issuer: ISSUER },
      bodyLimit: 1024 * 1024,
      timeZone,
      attemptCounter: database.attempts,
      loginThrottle: { max: 10, windowMs: 60_000 },
      timeouts: { requestMs: 30_000, connectionMs: 60_000, keepAliveMs: 72_000 },
      logger: false,
      ...(posts.cacheStats() === undefined
        ? {}
        : {
            postCache: {
              holds: (post: Post) => posts.holdsCached(post),
              stats: () =>
                posts.cacheStats() ?? {
                  hits: 0,
                  misses: 0,
                  pagesThroughCache: 0,
                  pagesInFull: 0,
                  posts: 0,
                  bytes: 0,
                },
            },
          }),
    });
    return { app, posts };
  }

  const getOne = async (app: FastifyInstance, id: number) => {
    const response = await app.inject({ method: "GET", url: `/api/v1/posts/${id}` });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
    return response.body;
  };

  /** Every page of `query`, checked to hold each post exactly as GET by id wrote it. */
  const walk = async (app: FastifyInstance, query: string, one: ReadonlyMap<number, string>) => {
    const listed: number[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/api/v1/posts?${query}${cursor === null ? "" : `&cursor=${cursor}`}`;
      const response = await app.inject({ method: "GET", url });
      expect(response.statusCode).toBe(200);
      expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
      const page = JSON.parse(response.body) as PageBody;
      const ids = page.content.map((post) => post.id);
      const items = ids.map((id) => one.get(id) ?? `<no GET of post ${id}>`);
      expect(response.body).toBe(
        `{"content":[${items.join(",")}],"size":${page.size},"nextCursor":${JSON.stringify(page.nextCursor)}}`,
      );
      listed.push(...ids);
      cursor = page.nextCursor;
    } while (cursor !== null);
    return listed;
  };

  for (const timeZone of ZONES) {
    it(`writes each post the same in GET by id, list and search pages and PATCH, in ${timeZone}, whatever the cache`, async () => {
      for (const mode of Object.keys(CACHES) as CacheMode[]) {
        const { app, posts } = await appFor(timeZone, mode);
        try {
          // Every post there is (those edited by the rounds before too), as the reference writes it.
          const stored = await database.posts.listPage({ limit: 100 });
          const one = new Map<number, string>();
          for (const post of stored) {
            const body = await getOne(app, post.id);
            expect(body, `post ${post.id} (${mode})`).toBe(expectedJson(post as Post, timeZone));
            one.set(post.id, body);
          }

          // Cold, then (for the warm mode) again once the pages are admitted to the cache and
          // a third time from it.
          const walks = mode === "through the cache, warm" ? 3 : 1;
          for (let round = 1; round <= walks; round++) {
            expect(await walk(app, "size=3", one)).toEqual(stored.map((post) => post.id));
            await walk(app, `size=2&userId=${author.id}`, one);
            // Searches: a term in several titles, a Korean one, one with JSON escapes in it.
            expect((await walk(app, "size=2&q=and", one)).length).toBeGreaterThan(2);
            expect(await walk(app, `size=5&q=${encodeURIComponent("게시판")}`, one)).toHaveLength(1);
            expect(await walk(app, `size=5&q=${encodeURIComponent('" and \\')}`, one)).toHaveLength(1);
          }
          if (mode === "through the cache, warm") expect(posts.cacheStats()?.hits).toBeGreaterThan(0);

          // A PATCH answers the post as the database now holds it, and GET and the pages write it so.
          const target = await database.posts.create({
            authorId: author.id,
            title: `to edit in ${timeZone} (${mode})`,
            content: 'Ünïcödé "content" 😀',
            createdAt: INSTANTS[0] as Date,
          });
          if (target === undefined) throw new Error("the author is gone");
          one.set(target.id, await getOne(app, target.id));
          await walk(app, "size=4", one);
          const patched = await app.inject({
            method: "PATCH",
            url: `/api/v1/posts/${target.id}`,
            headers: { "x-auth-token": token, "content-type": "application/json" },
            payload: { title: `edited in ${timeZone} (${mode})` },
          });
          expect(patched.statusCode).toBe(200);
          expect(patched.headers["content-type"]).toBe("application/json; charset=utf-8");
          expect(patched.body).toBe(
            expectedJson((await database.posts.findById(target.id)) as Post, timeZone),
          );
          expect(await getOne(app, target.id)).toBe(patched.body);
          one.set(target.id, patched.body);
          await walk(app, "size=4", one);
          expect(
            await walk(app, `size=3&q=${encodeURIComponent(`edited in ${timeZone} (${mode})`)}`, one),
          ).toEqual([target.id]);
        } finally {
          await app.close();
        }
      }
    }, 60_000);
  }
});
