import { MESSAGES } from "@posts/domain";
import { aPost, aUser } from "@posts/domain/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { expectEnvelope } from "../support/expectations.js";
import { useTestApp } from "../support/test-app.js";

const PATH = "/api/v1/posts";
const LINK = /^<(http:\/\/localhost(?::\d+)?(\/api\/v1\/posts\?[^>]+))>; rel="next"$/;

describe("search: GET /api/v1/posts?q= (docs/posts.md#search)", () => {
  const t = useTestApp();
  const get = (url: string) => t().app.inject({ method: "GET", url });
  const ids = (response: { json(): { content: { id: number }[] } }) =>
    response.json().content.map((post) => post.id);
  let author: { id: number };
  let other: { id: number };
  const made: Record<string, number> = {};

  beforeAll(async () => {
    author = await aUser(t().deps.users);
    other = await aUser(t().deps.users);
    for (const [name, title, content] of [
      ["hello", "Hello World", "body"],
      ["helloInContent", "title", "say HELLO to 세계"],
      ["percent", "100% sure", "body"],
      ["underscore", "snake_case", "body"],
      ["backslash", "back\\slash", "body"],
      ["korean", "안녕하세요", "본문 😀"],
      ["plain", "nothing", "to see"],
    ] as const) {
      made[name] = (await aPost(t().deps.posts, author, { title, content })).id;
    }
    made.othersHello = (
      await aPost(t().deps.posts, other, { title: "hello from someone else", content: "x" })
    ).id;
  });

  const mine = (query: string) => `${PATH}?userId=${author.id}&${query}`;

  it("keeps the posts whose title or content contains q, ASCII case ignored, newest first", async () => {
    for (const q of ["hello", "HELLO", "hElLo"]) {
      const response = await get(mine(`q=${q}`));
      expect(response.statusCode).toBe(200);
      expect(ids(response)).toEqual([made.helloInContent, made.hello]);
    }
    expect(ids(await get(`${PATH}?q=hello`))).toEqual([made.othersHello, made.helloInContent, made.hello]);
  });

  it("matches %, _ and \\ as themselves, and Korean and emoji as written", async () => {
    expect(ids(await get(mine("q=%25")))).toEqual([made.percent]);
    expect(ids(await get(mine("q=_")))).toEqual([made.underscore]);
    expect(ids(await get(mine("q=%5C")))).toEqual([made.backslash]);
    expect(ids(await get(mine(`q=${encodeURIComponent("세계")}`)))).toEqual([made.helloInContent]);
    expect(ids(await get(mine(`q=${encodeURIComponent("😀")}`)))).toEqual([made.korean]);
    expect(ids(await get(mine(`q=${encodeURIComponent("안녕")}`)))).toEqual([made.korean]);
    expect(ids(await get(mine("q=absent")))).toEqual([]);
  });

  it("treats an empty q as no q", async () => {
    const all = await get(mine("size=100"));
    const empty = await get(mine("size=100&q="));
    expect(empty.body).toBe(all.body);
    expect(ids(empty)).toHaveLength(7);
  });

  it("pages a search like any list: size, nextCursor, and a Link that keeps size, userId and q", async () => {
    const seen: number[] = [];
    let url: string | undefined = mine("size=2&q=E");
    while (url !== undefined) {
      const response = await get(url);
      expect(response.statusCode).toBe(200);
      const page = response.json();
      expect(page.size).toBe(2);
      seen.push(...ids(response));
      if (page.nextCursor === null) {
        expect(response.headers.link).toBeUndefined();
        url = undefined;
      } else {
        const match = LINK.exec(String(response.headers.link));
        expect(match).not.toBeNull();
        expect(Object.fromEntries(new URL(match?.[1] ?? "").searchParams)).toEqual({
          size: "2",
          cursor: page.nextCursor,
          userId: String(author.id),
          q: "E",
        });
        url = match?.[2];
      }
    }
    expect(seen).toEqual([made.plain, made.underscore, made.percent, made.helloInContent, made.hello]);
  });

  it("keeps q in the Link exactly, whatever characters it has", async () => {
    const user = await aUser(t().deps.users);
    const q = "a b&c=d+e%f/?#가😀";
    const first = await aPost(t().deps.posts, user, { title: `1 ${q}` });
    const second = await aPost(t().deps.posts, user, { content: `2 ${q.toUpperCase()}` });
    const page = await get(`${PATH}?size=1&userId=${user.id}&q=${encodeURIComponent(q)}`);
    expect(ids(page)).toEqual([second.id]);
    const next = LINK.exec(String(page.headers.link));
    expect(new URL(next?.[1] ?? "").searchParams.get("q")).toBe(q);
    const rest = await get(next?.[2] ?? "");
    expect(ids(rest)).toEqual([first.id]);
    expect(rest.json().nextCursor).toBeNull();
  });

  it("answers the 400 envelope for a q over 200 code points, with U+0000, or given twice; 200 code points pass", async () => {
    expect((await get(mine(`q=${encodeURIComponent("😀".repeat(200))}`))).statusCode).toBe(200);
    expect((await get(mine(`q=${"a".repeat(200)}`))).statusCode).toBe(200);
    for (const [query, message] of [
      [`q=${encodeURIComponent("😀".repeat(201))}`, MESSAGES.searchTooLong],
      [`q=${"a".repeat(201)}`, MESSAGES.searchTooLong],
      ["q=a%00b", MESSAGES.searchInvalidCharacter],
      ["q=a&q=b", MESSAGES.searchNotString],
    ] as const) {
      expectEnvelope(await get(`${PATH}?${query}`), 400, PATH, [{ field: "q", message }]);
    }
    expectEnvelope(await get(`${PATH}?size=0&q=${"a".repeat(201)}&userId=x`), 400, PATH, [
      { field: "size", message: MESSAGES.sizeInvalid },
      { field: "userId", message: MESSAGES.userIdInvalid },
      { field: "q", message: MESSAGES.searchTooLong },
    ]);
  });

  it("a search page has its own weak ETag, which revalidates it", async () => {
    const all = await get(mine("size=100"));
    const search = await get(mine("size=100&q=hello"));
    expect(search.headers.etag).not.toBe(all.headers.etag);
    const again = await t().app.inject({
      method: "GET",
      url: mine("size=100&q=hello"),
      headers: { "if-none-match": String(search.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
  });

  it("writes a page holding a large post whole in parts, the same JSON as a page of small posts", async () => {
    // Past CONTENT_PART_CHARACTERS, with characters JSON escapes and one beyond the BMP.
    const content = `${'needle "quoted" \\ 세계 😀\n'.repeat(20_000)}end`;
    const large = await aPost(t().deps.posts, author, { title: "large needle", content });
    const small = await aPost(t().deps.posts, author, { title: "small needle", content: "x" });
    const response = await get(mine("q=needle"));
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
    const page = response.json() as { content: { id: number; content: string }[]; size: number };
    expect(page.content.map((post) => post.id)).toEqual([small.id, large.id]);
    expect(page.content[1]?.content).toBe(content);
  });
});
