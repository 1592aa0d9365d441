import type { ApiClient } from "../http/api-client.js";
import type { ConformanceCase } from "../runner/conformance-case.js";
import { expectEnvelope, expectEqual, expectThat } from "../support/expectations.js";
import { type Fixture, POSTS, type TestUser } from "../support/fixture.js";
import { nextLinkOf } from "../support/next-link.js";
import { expectPageReply } from "../support/wire-shapes.js";

const section = "docs/posts.md#search";

/** Creates the posts in order (oldest first) and answers their ids. */
async function postsOf(
  fixture: Fixture,
  author: TestUser,
  posts: readonly { readonly title?: string; readonly content?: string }[],
): Promise<number[]> {
  const ids: number[] = [];
  for (const post of posts) ids.push(await fixture.createPost(author, post));
  return ids;
}

/** The ids of every page of `query`, following nextCursor. */
async function searchIds(api: ApiClient, query: Readonly<Record<string, string>>): Promise<number[]> {
  const ids: number[] = [];
  let cursor: string | null = null;
  do {
    const params = new URLSearchParams({ ...query, ...(cursor === null ? {} : { cursor }) });
    const page = expectPageReply(await api.get(`${POSTS}?${params}`));
    ids.push(...page.content.map((post) => post.id));
    cursor = page.nextCursor;
  } while (cursor !== null);
  return ids;
}

const newestFirst = (ids: readonly number[]) => [...ids].sort((a, b) => b - a);

/** docs/posts.md#search: GET /api/v1/posts?q=. Every term is unique to this run, so other data never matches. */
export const searchCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "q finds exactly the posts whose title or content contains it, newest first",
    async run({ api, fixture }) {
      const author = await fixture.register("search");
      const term = fixture.term("sub");
      const [inTitle, inContent, neither, inBoth] = await postsOf(fixture, author, [
        { title: `앞${term}뒤`, content: "본문" },
        { title: "제목", content: `prefix ${term} suffix` },
        { title: "제목", content: "본문" },
        { title: term, content: term },
      ]);
      const expected = newestFirst([inTitle, inContent, inBoth] as number[]);
      expectEqual(await searchIds(api, { q: term }), expected, `ids found by q=${term}`);
      expectEqual(
        await searchIds(api, { q: term, userId: String(author.id) }),
        expected,
        "ids found with userId",
      );
      expectThat(!expected.includes(neither as number), "the post without the term", "not found", neither);
      expectEqual(
        await searchIds(api, { q: term.slice(2, -2) }),
        expected,
        "ids found by a substring of the term",
      );
    },
  },
  {
    section,
    name: "q ignores ASCII letter case, both ways",
    async run({ api, fixture }) {
      const author = await fixture.register("casing");
      const term = fixture.term("case");
      const [lower, upper] = await postsOf(fixture, author, [
        { title: `lower ${term}` },
        { content: `UPPER ${term.toUpperCase()}` },
      ]);
      const expected = newestFirst([lower, upper] as number[]);
      expectEqual(await searchIds(api, { q: term }), expected, "ids found by the lower-case term");
      expectEqual(
        await searchIds(api, { q: term.toUpperCase() }),
        expected,
        "ids found by the upper-case term",
      );
      const mixed = [...term].map((char, index) => (index % 2 === 0 ? char.toUpperCase() : char)).join("");
      expectEqual(await searchIds(api, { q: mixed }), expected, "ids found by a mixed-case term");
    },
  },
  {
    section,
    name: "%, _ and \\ in q match themselves, not as patterns",
    async run({ api, fixture }) {
      const author = await fixture.register("literal");
      const term = fixture.term("lit");
      const [percent, underscore, backslash] = await postsOf(fixture, author, [
        { title: `${term}%percent` },
        { title: `${term}_under` },
        { title: `${term}\\back` },
        { title: `${term}Xdecoy` },
        { title: `${term}\\\\double` },
      ]);
      expectEqual(await searchIds(api, { q: `${term}%` }), [percent], `ids found by ${term}%`);
      expectEqual(await searchIds(api, { q: `${term}_` }), [underscore], `ids found by ${term}_`);
      expectEqual(await searchIds(api, { q: `${term}\\b` }), [backslash], `ids found by ${term}\\b`);
      expectEqual(await searchIds(api, { q: `%${term}` }), [], `ids found by %${term}`);
      expectEqual(
        await searchIds(api, { q: "%", userId: String(author.id) }),
        [percent],
        "ids found by % with userId",
      );
      expectEqual(
        await searchIds(api, { q: "_", userId: String(author.id) }),
        [underscore],
        "ids found by _ with userId",
      );
    },
  },
  {
    section,
    name: "Korean and emoji match exactly as written (with userId)",
    async run({ api, fixture }) {
      const author = await fixture.register("hangul");
      const [korean, emoji] = await postsOf(fixture, author, [
        { title: "오늘의 글", content: "한국어 검색이 잘 되는지 봅니다" },
        { title: "무지개 🦄🌈 글", content: "이모지" },
        { title: "다른 글", content: "검 색" },
      ]);
      const userId = String(author.id);
      expectEqual(await searchIds(api, { q: "한국어 검색", userId }), [korean], "ids found by 한국어 검색");
      expectEqual(await searchIds(api, { q: "국어", userId }), [korean], "ids found by 국어");
      expectEqual(
        await searchIds(api, { q: "한국어검색", userId }),
        [],
        "ids found by 한국어검색 (no space)",
      );
      expectEqual(await searchIds(api, { q: "🦄🌈", userId }), [emoji], "ids found by 🦄🌈");
      expectEqual(await searchIds(api, { q: "🌈🦄", userId }), [], "ids found by 🌈🦄");
    },
  },
  {
    section,
    name: "search pages keep the keyset rules: size, cursor walk, nextCursor null at the end, Link keeping q, size and userId",
    async run({ api, fixture }) {
      const author = await fixture.register("searchpages");
      const term = fixture.term("pages");
      const ids = newestFirst(
        await postsOf(
          fixture,
          author,
          [1, 2, 3, 4, 5].map((n) => ({ title: `${term} ${n}` })),
        ),
      );
      const query = { q: term, size: "2", userId: String(author.id) };
      const seen: number[] = [];
      const sizes: number[] = [];
      let path = `${POSTS}?${new URLSearchParams(query)}`;
      for (;;) {
        const reply = await api.get(path);
        const page = expectPageReply(reply);
        expectEqual(page.size, 2, `${reply.request}: size`);
        seen.push(...page.content.map((post) => post.id));
        sizes.push(page.content.length);
        if (page.nextCursor === null) break;
        const link = nextLinkOf(reply);
        expectThat(
          link !== null,
          `${reply.request}: Link`,
          '<next URL>; rel="next"',
          reply.headers.get("link"),
        );
        const next = link as URL;
        expectEqual(
          [next.searchParams.get("q"), next.searchParams.get("size"), next.searchParams.get("userId")],
          [term, "2", String(author.id)],
          `${reply.request}: q, size and userId of the Link`,
        );
        path = `${next.pathname}${next.search}`;
      }
      expectEqual(sizes, [2, 2, 1], "posts per page");
      expectEqual(seen, ids, "ids visited");
    },
  },
  {
    section,
    name: "q of more than 200 code points or holding U+0000 → 400 envelope; 200 emoji (400 UTF-16 units) is fine",
    async run({ api }) {
      for (const q of ["a".repeat(201), "😀".repeat(201), "a\u0000b"]) {
        expectEnvelope(await api.get(`${POSTS}?${new URLSearchParams({ q })}`), 400, POSTS);
      }
      for (const q of ["a".repeat(200), "😀".repeat(200)]) {
        expectPageReply(await api.get(`${POSTS}?${new URLSearchParams({ q, size: "1" })}`));
      }
    },
  },
  {
    section,
    name: "an empty q is the same as no q",
    async run({ api, fixture }) {
      const author = await fixture.register("emptyq");
      const ids = newestFirst(await postsOf(fixture, author, [{ title: "하나" }, { title: "둘" }]));
      expectEqual(
        await searchIds(api, { q: "", userId: String(author.id) }),
        ids,
        "ids found by q= with userId",
      );
      expectEqual(await searchIds(api, { userId: String(author.id) }), ids, "ids without q");
      const page = expectPageReply(await api.get(`${POSTS}?q=&size=3`));
      expectEqual(page.size, 3, "size of ?q=&size=3");
    },
  },
];
