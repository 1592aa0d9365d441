import { describe, expect } from "vitest";
import type { Post } from "../../post.js";
import { keysetWalk } from "./keyset-walk.js";
import type { PostContractContext } from "./post-contract-context.js";

const ids = (posts: readonly Pick<Post, "id">[]) => posts.map((post) => post.id);

/**
 * The post repository's search (`PostPageQuery.search`): substrings of title or content, ASCII
 * case ignored, every other character matching itself, in keyset pages combined with the other
 * filters. Part of `postRepositoryContract`.
 */
export function searchContract({ fixture, spec, newAuthor, newPost }: PostContractContext): void {
  /** The posts of `author` whose title or content contains `search`, newest first. */
  const search = async (author: { readonly id: number }, text: string, more: { beforeId?: number } = {}) =>
    ids(await fixture().posts.listPage({ limit: 100, authorId: author.id, search: text, ...more }));

  describe("listPage with search", () => {
    spec("finds the text in the title or the content, newest first, each post in full", async () => {
      const author = await newAuthor();
      const inTitle = await newPost(author, { title: "a needle here", content: "nothing" });
      await newPost(author, { title: "nothing", content: "nothing" });
      const inContent = await newPost(author, { title: "nothing", content: "line 1\nthe needle\n" });
      const inBoth = await newPost(author, { title: "needle", content: "needle" });
      expect(
        await fixture().posts.listPage({ limit: 10, authorId: author.id, search: "needle" }),
      ).toStrictEqual([inBoth, inContent, inTitle]);
    });

    spec("ignores the case of ASCII letters, in the text and in the search", async () => {
      const author = await newAuthor();
      const lower = await newPost(author, { title: "hello world" });
      const upper = await newPost(author, { title: "x", content: "SAY HELLO" });
      const mixed = await newPost(author, { title: "HeLLo" });
      await newPost(author, { title: "help", content: "hell o" });
      for (const text of ["hello", "HELLO", "hElLo"]) {
        expect(await search(author, text)).toEqual([mixed.id, upper.id, lower.id]);
      }
    });

    spec("matches Korean and emoji exactly as written", async () => {
      const author = await newAuthor();
      const greeting = await newPost(author, { title: "안녕하세요 여러분", content: "본문" });
      const farewell = await newPost(author, { title: "안녕히 가세요", content: "👍🏽 좋아요 😀" });
      expect(await search(author, "녕하")).toEqual([greeting.id]);
      expect(await search(author, "안녕")).toEqual([farewell.id, greeting.id]);
      expect(await search(author, "안녕히 가")).toEqual([farewell.id]);
      expect(await search(author, "👍🏽")).toEqual([farewell.id]);
      expect(await search(author, "👍🏿")).toEqual([]);
      expect(await search(author, "😀")).toEqual([farewell.id]);
      expect(await search(author, "하세요")).toEqual([greeting.id]);
      expect(await search(author, "여러분!")).toEqual([]);
    });

    spec("matches %, _ and \\ as themselves, not as wildcards", async () => {
      const author = await newAuthor();
      const percent = await newPost(author, { title: "100% sure" });
      const plain = await newPost(author, { title: "100 sure" });
      const underscore = await newPost(author, { title: "snake_case" });
      const spaced = await newPost(author, { title: "snake case" });
      const backslash = await newPost(author, { title: "C:\\path\\file" });
      const slash = await newPost(author, { title: "C:/path/file" });
      expect(await search(author, "100%")).toEqual([percent.id]);
      expect(await search(author, "%")).toEqual([percent.id]);
      expect(await search(author, "0% s")).toEqual([percent.id]);
      expect(await search(author, "e_c")).toEqual([underscore.id]);
      expect(await search(author, "_")).toEqual([underscore.id]);
      expect(await search(author, "\\")).toEqual([backslash.id]);
      expect(await search(author, "\\path")).toEqual([backslash.id]);
      expect(await search(author, "C:\\p")).toEqual([backslash.id]);
      expect(await search(author, "\\%")).toEqual([]);
      expect(await search(author, "%%")).toEqual([]);
      expect(await search(author, "/path")).toEqual([slash.id]);
      expect(await search(author, "100 ")).toEqual([plain.id]);
      expect(await search(author, "snake case")).toEqual([spaced.id]);
    });

    spec("matches quotes and SQL syntax as text", async () => {
      const author = await newAuthor();
      const quoted = await newPost(author, { title: `it's "quoted"; -- drop` });
      expect(await search(author, "it's")).toEqual([quoted.id]);
      expect(await search(author, `"quoted"; --`)).toEqual([quoted.id]);
      expect(await search(author, "' OR '1'='1")).toEqual([]);
    });

    spec("combines with the author filter and beforeId", async () => {
      const a = await newAuthor();
      const b = await newAuthor();
      const a1 = await newPost(a, { title: "match one" });
      const b1 = await newPost(b, { title: "match two" });
      await newPost(a, { title: "other" });
      const a2 = await newPost(a, { content: "match three" });
      const b2 = await newPost(b, { title: "MATCH four" });
      const a3 = await newPost(a, { title: "match five" });
      expect(await search(a, "match")).toEqual([a3.id, a2.id, a1.id]);
      expect(await search(b, "match")).toEqual([b2.id, b1.id]);
      expect(await search(a, "match", { beforeId: a3.id })).toEqual([a2.id, a1.id]);
      expect(await search(a, "match", { beforeId: b2.id })).toEqual([a2.id, a1.id]);
      expect(await search(a, "match", { beforeId: a1.id })).toEqual([]);
      expect(
        ids(await fixture().posts.listPage({ limit: 2, authorId: a.id, search: "match", beforeId: a3.id })),
      ).toEqual([a2.id, a1.id]);
      expect(ids(await fixture().posts.listPage({ limit: 1, authorId: a.id, search: "match" }))).toEqual([
        a3.id,
      ]);
    });

    spec("searches everyone's posts without an author filter", async () => {
      // A word no other test writes, so that the unfiltered search sees only this test's posts.
      const word = `Zebra${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
      const a = await newAuthor();
      const b = await newAuthor();
      const first = await newPost(a, { title: `${word} one` });
      await newPost(b, { title: "unrelated" });
      const second = await newPost(b, { content: `two ${word.toUpperCase()}` });
      expect(ids(await fixture().posts.listPage({ limit: 10, search: word.toLowerCase() }))).toEqual([
        second.id,
        first.id,
      ]);
      expect(ids(await fixture().posts.listPage({ limit: 1, search: word, beforeId: second.id }))).toEqual([
        first.id,
      ]);
    });

    spec(
      "a keyset walk of a search visits every match once while matching posts are created between pages",
      async () => {
        const author = await newAuthor();
        const matching = [];
        for (let i = 0; i < 8; i++) {
          const post = await newPost(author, { title: i % 3 === 0 ? "skip" : `Found ${i}` });
          if (i % 3 !== 0) matching.push(post);
        }
        const seen = await keysetWalk(
          fixture().posts,
          { limit: 2, authorId: author.id, search: "found" },
          () => newPost(author, { title: "found while walking" }),
        );
        expect(seen).toEqual(ids(matching).reverse());
      },
    );

    spec("finds text anywhere in a long content", async () => {
      const author = await newAuthor();
      const long = await newPost(author, { content: `${"가나다 lorem ipsum ".repeat(100_000)}the End` });
      await newPost(author, { content: "가나다 lorem ipsum" });
      expect(await search(author, "THE end")).toEqual([long.id]);
    });
  });
}
