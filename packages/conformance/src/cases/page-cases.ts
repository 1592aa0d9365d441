import type { ApiClient } from "../http/api-client.js";
import type { ConformanceCase } from "../runner/conformance-case.js";
import { expectEnvelope, expectEqual, expectThat } from "../support/expectations.js";
import { type Fixture, POSTS, type TestUser, USER } from "../support/fixture.js";
import { nextLinkOf } from "../support/next-link.js";
import { expectPageReply, type PageJson } from "../support/wire-shapes.js";

const section = "docs/posts.md#pages-get-apiv1posts";

/** A user of its own with `count` posts; answers the user and the ids, newest first. */
async function authorWithPosts(
  fixture: Fixture,
  label: string,
  count: number,
): Promise<[TestUser, number[]]> {
  const author = await fixture.register(label);
  const ids: number[] = [];
  for (let index = 0; index < count; index += 1) {
    ids.push(await fixture.createPost(author, { title: `${label} ${index}`, content: `본문 ${index}` }));
  }
  return [author, ids.reverse()];
}

/** Follows `nextCursor` from `firstPath`, checking each page's Link; answers the pages. */
async function walk(
  api: ApiClient,
  firstPath: string,
  query: Readonly<Record<string, string>>,
): Promise<PageJson[]> {
  const pages: PageJson[] = [];
  let path = firstPath;
  for (let guard = 0; guard < 1000; guard += 1) {
    const reply = await api.get(path);
    const page = expectPageReply(reply);
    pages.push(page);
    const link = nextLinkOf(reply);
    if (page.nextCursor === null) return pages;
    expectThat(
      link !== null,
      `${reply.request}: Link`,
      '<next URL>; rel="next" (nextCursor is not null)',
      link,
    );
    const next = link as URL;
    expectEqual(next.pathname, POSTS, `${reply.request}: Link path`);
    const kept = Object.fromEntries(Object.keys(query).map((name) => [name, next.searchParams.get(name)]));
    expectEqual(kept, query, `${reply.request}: Link keeps the query`);
    expectEqual(next.searchParams.get("cursor"), page.nextCursor, `${reply.request}: Link cursor`);
    path = `${next.pathname}${next.search}`;
  }
  throw new Error("more than 1000 pages: the cursors never end");
}

const idsOf = (pages: readonly PageJson[]) => pages.flatMap((page) => page.content.map((post) => post.id));

/** docs/posts.md#pages-get-apiv1posts: keyset pages, their cursors and links, and invalid parameters. */
export const pageCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "a page is {content, size, nextCursor}, newest first; size defaults to 20 and echoes the size asked",
    async run({ api }) {
      const first = expectPageReply(await api.get(POSTS));
      expectEqual(first.size, 20, "size when none is asked");
      const ids = first.content.map((post) => post.id);
      expectThat(
        ids.every((id, index) => index === 0 || id < (ids[index - 1] as number)),
        "ids of the first page",
        "strictly descending",
        ids,
      );
      for (const size of [1, 7, 100]) {
        const page = expectPageReply(await api.get(`${POSTS}?size=${size}`));
        expectEqual(page.size, size, `size of ?size=${size}`);
        expectThat(
          page.content.length <= size,
          `posts on ?size=${size}`,
          `at most ${size}`,
          page.content.length,
        );
      }
    },
  },
  {
    section,
    name: "walking one author's cursors visits every post once, newest first; nextCursor is null exactly on the last page",
    async run({ api, fixture }) {
      const [author, ids] = await authorWithPosts(fixture, "walker", 7);
      const pages = await walk(api, `${POSTS}?userId=${author.id}&size=3`, {
        size: "3",
        userId: String(author.id),
      });
      expectEqual(
        pages.map((page) => page.content.length),
        [3, 3, 1],
        "posts per page",
      );
      expectEqual(idsOf(pages), ids, "ids visited");
      for (const page of pages) expectEqual(page.size, 3, "size of every page");
      const whole = expectPageReply(await api.get(`${POSTS}?userId=${author.id}&size=7`));
      expectEqual(whole.nextCursor, null, "nextCursor of a page that holds the last post exactly");
      const almost = await walk(api, `${POSTS}?userId=${author.id}&size=6`, {
        size: "6",
        userId: String(author.id),
      });
      expectEqual(
        almost.map((page) => page.content.length),
        [6, 1],
        "posts per page with size 6",
      );
    },
  },
  {
    section,
    name: 'a page with a next one has Link: <absolute URL>; rel="next" keeping size and userId, and following it gives the next page',
    async run({ api, fixture }) {
      const [author, ids] = await authorWithPosts(fixture, "linker", 3);
      const reply = await api.get(`${POSTS}?size=2&userId=${author.id}&unknown=ignored`);
      const page = expectPageReply(reply);
      const link = nextLinkOf(reply);
      expectThat(
        link !== null,
        `${reply.request}: Link`,
        '<absolute URL>; rel="next"',
        reply.headers.get("link"),
      );
      const next = link as URL;
      expectEqual(
        [next.searchParams.get("size"), next.searchParams.get("userId"), next.searchParams.get("cursor")],
        ["2", String(author.id), page.nextCursor],
        "size, userId and cursor of the Link",
      );
      const second = expectPageReply(await api.get(`${next.pathname}${next.search}`));
      expectEqual(idsOf([page, second]), ids, "ids of the two pages");
      expectEqual(second.nextCursor, null, "nextCursor of the last page");
    },
  },
  {
    section,
    name: "posts created during a walk do not appear in it, and nothing is skipped or repeated",
    async run({ api, fixture }) {
      const [author, ids] = await authorWithPosts(fixture, "moving", 5);
      const seen: number[] = [];
      let path = `${POSTS}?userId=${author.id}&size=2`;
      for (;;) {
        const page = expectPageReply(await api.get(path));
        seen.push(...page.content.map((post) => post.id));
        await fixture.createPost(author, { title: "walk에 끼어든 글" });
        if (page.nextCursor === null) break;
        path = `${POSTS}?userId=${author.id}&size=2&cursor=${encodeURIComponent(page.nextCursor)}`;
      }
      expectEqual(seen, ids, "ids visited while posts were being created");
    },
  },
  {
    section,
    name: "an unknown userId is valid: an empty page, nextCursor null",
    async run({ api, fixture }) {
      const gone = await fixture.register("nobody");
      expectEqual((await api.delete(USER, { token: gone.token })).status, 204, `DELETE ${USER}`);
      fixture.forget(gone);
      for (const userId of [String(gone.id), "9223372036854775807"]) {
        const page = expectPageReply(await api.get(`${POSTS}?userId=${userId}`));
        expectEqual([page.content, page.nextCursor], [[], null], `the page of userId=${userId}`);
      }
    },
  },
  {
    section,
    name: "unknown query parameters are ignored",
    async run({ api, fixture }) {
      const [author, ids] = await authorWithPosts(fixture, "ignored", 2);
      const page = expectPageReply(await api.get(`${POSTS}?userId=${author.id}&page=7&sort=asc&foo=bar`));
      expectEqual(idsOf([page]), ids, "ids of the page");
    },
  },
  {
    section,
    name: "an invalid size, cursor or userId → 400 envelope",
    async run({ api }) {
      const invalid = [
        "size=0",
        "size=101",
        "size=-1",
        "size=abc",
        "size=1.5",
        "cursor=not%20a%20cursor",
        "cursor=!!!",
        "userId=abc",
        "userId=1.5",
        "userId=12abc",
      ];
      for (const query of invalid) expectEnvelope(await api.get(`${POSTS}?${query}`), 400, POSTS);
    },
  },
];
