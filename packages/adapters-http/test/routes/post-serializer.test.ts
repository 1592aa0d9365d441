import type { Post, PostPage } from "@posts/domain";
import fc from "fast-check";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { timestampFormatter } from "../../src/http/timestamp-formatter.js";
import type { PostCacheAccess } from "../../src/http-app-options.js";
import { CONTENT_PART_CHARACTERS, postSerializer, toPostJson } from "../../src/routes/post-serializer.js";
import { PostPageSchema, PostSchema } from "../../src/schemas/post-schemas.js";

const format = timestampFormatter("Asia/Seoul");

// Any text a post may hold: every code point but U+0000 (refused), never a lone surrogate (refused
// too); ASCII often, for its control characters, quotes and backslashes.
const text = fc
  .oneof(fc.string({ unit: "grapheme", maxLength: 40 }), fc.string({ unit: "binary-ascii", maxLength: 40 }))
  .filter((s) => !s.includes("\u0000"));
const post: fc.Arbitrary<Post> = fc.record({
  id: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  title: text,
  content: text,
  createdAt: fc.date({
    min: new Date("1970-01-01T00:00:00Z"),
    max: new Date("2100-01-01T00:00:00Z"),
    noInvalidDate: true,
  }),
  updatedAt: fc.date({
    min: new Date("1970-01-01T00:00:00Z"),
    max: new Date("2100-01-01T00:00:00Z"),
    noInvalidDate: true,
  }),
  author: fc.record({ id: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), email: text }),
});
const page: fc.Arbitrary<PostPage> = fc.record({
  posts: fc.array(post, { maxLength: 5 }),
  size: fc.integer({ min: 1, max: 100 }),
  nextCursor: fc.option(fc.base64String({ minLength: 4, maxLength: 16 }), { nil: null }),
});

/** What Fastify's own schema serializer (fast-json-stringify) writes for the schemas, as the routes did before. */
async function schemaSerializer() {
  let next: unknown;
  const app = Fastify();
  app.get("/post", { schema: { response: { 200: PostSchema } } }, async () => next);
  app.get("/page", { schema: { response: { 200: PostPageSchema } } }, async () => next);
  await app.ready();
  const serialize = async (path: string, value: unknown) => {
    next = value;
    return (await app.inject({ method: "GET", url: path })).rawPayload;
  };
  return {
    post: (p: Post) => serialize("/post", toPostJson(p, format)),
    page: (p: PostPage) =>
      serialize("/page", {
        content: p.posts.map((each) => toPostJson(each as Post, format)),
        size: p.size,
        nextCursor: p.nextCursor,
      }),
    close: () => app.close(),
  };
}

/** A cache that holds exactly the posts it was told about. */
function cacheHolding(held: Set<Post>): PostCacheAccess {
  return {
    holds: (p) => held.has(p as Post),
    stats: () => ({ hits: 0, misses: 0, pagesThroughCache: 0, pagesInFull: 0, posts: held.size, bytes: 0 }),
  };
}

describe("postSerializer", () => {
  it("writes posts and pages byte for byte as Fastify's serializer writes the response schemas", async () => {
    const reference = await schemaSerializer();
    try {
      const plain = postSerializer(format);
      // A cache that holds none of these posts, and one that holds all: their bytes are kept.
      const passing = postSerializer(format, cacheHolding(new Set()));
      const keeping = postSerializer(format, { ...cacheHolding(new Set()), holds: () => true });
      await fc.assert(
        fc.asyncProperty(post, page, async (p, pg) => {
          const [onePost, onePage] = [await reference.post(p), await reference.page(pg)];
          for (const serializer of [plain, passing, keeping]) {
            expect(serializer.post(p)).toEqual(onePost);
            expect(serializer.page(pg)).toEqual(onePage);
            // In parts, as a page with large posts is streamed: the same bytes.
            const parts = [
              serializer.pageStart(),
              ...pg.posts.flatMap((each, i) => [...serializer.pageItem(each as Post, i)]),
              serializer.pageEnd(pg),
            ];
            expect(Buffer.concat(parts)).toEqual(onePage);
          }
          // Kept, and the same bytes again.
          expect(keeping.post(p)).toEqual(onePost);
        }),
        { numRuns: 300 },
      );
    } finally {
      await reference.close();
    }
  });

  it("writes a large content in parts, the same bytes as whole, never cutting a surrogate pair", () => {
    const serializer = postSerializer(format);
    const [base] = fc.sample(post, 1) as [Post];
    // Escapes, two- and four-byte characters, and pairs across every cut between parts.
    const unit = 'a"\\\n\u0001가😀';
    const content = unit.repeat(Math.ceil((3 * CONTENT_PART_CHARACTERS) / unit.length) + 7);
    for (const shift of [0, 1, 2]) {
      const large = { ...base, content: "x".repeat(shift) + content };
      const parts = [...serializer.postParts(large)];
      expect(parts.length).toBeGreaterThan(4);
      // As text: a comparison of strings, where one of Buffers goes byte by byte.
      const whole = serializer.post(large).toString();
      expect(Buffer.concat(parts).toString()).toBe(whole);
      expect(Buffer.concat([...serializer.pageItem(large, 1)]).toString()).toBe(`,${whole}`);
    }
  });

  it("keeps the JSON of a post the cache holds, and of no other", () => {
    const [cached, passing] = fc.sample(post, 2) as [Post, Post];
    const serializer = postSerializer(format, cacheHolding(new Set([cached])));
    const write = () =>
      JSON.parse(serializer.page({ posts: [cached, passing], size: 2, nextCursor: null }).toString()) as {
        content: { title: string }[];
      };
    const first = write();
    // A cached post never changes (a new version is a new object): changing these two here
    // shows which JSON was kept and which is written afresh.
    (cached as { title: string }).title = "changed after it was written";
    (passing as { title: string }).title = "changed after it was written";
    const second = write();
    expect(second.content[0]).toEqual(first.content[0]);
    expect(second.content[1]?.title).toBe("changed after it was written");
    expect(JSON.parse(serializer.post(cached).toString())).toEqual(first.content[0]);
  });
});
