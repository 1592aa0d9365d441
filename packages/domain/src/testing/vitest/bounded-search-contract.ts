import { describe, expect } from "vitest";
import { decodeCursor } from "../../cursor.js";
import type { PostRepository, SearchPageQuery } from "../../ports/post-repository.js";
import { isWhole, type Post } from "../../post.js";
import { DEFAULT_SEARCH_BYTES, postTextBytes } from "../../post-repository-rules.js";
import { listPosts } from "../../use-cases/list-posts.js";
import type { PostContractContext } from "./post-contract-context.js";

const ids = (posts: readonly Pick<Post, "id">[]) => posts.map((post) => post.id);

/** One search page as the walk saw it. */
interface WalkedPage {
  readonly beforeId: number | undefined;
  readonly ids: readonly number[];
  readonly resumeBelow: number | undefined;
}

/**
 * Follows a search from its first page to its end as the listing does: after a full page, below
 * its last post; after a page that stopped early, below `resumeBelow`; the end when neither.
 * Fails beyond `maxPages`, so a walk that never ends is a failure rather than a hang.
 */
async function walk(
  posts: PostRepository,
  query: Omit<SearchPageQuery, "beforeId">,
  maxPages: number,
): Promise<WalkedPage[]> {
  const pages: WalkedPage[] = [];
  let beforeId: number | undefined;
  for (;;) {
    if (pages.length === maxPages) throw new Error(`the search has not ended after ${maxPages} pages`);
    const read = await posts.searchPage({ ...query, ...(beforeId === undefined ? {} : { beforeId }) });
    const page = { beforeId, ids: ids(read.posts), resumeBelow: read.resumeBelow };
    pages.push(page);
    expect(page.ids.length).toBeLessThanOrEqual(query.limit);
    if (page.ids.length === query.limit) beforeId = page.ids.at(-1);
    else if (page.resumeBelow !== undefined) beforeId = page.resumeBelow;
    else return pages;
  }
}

/**
 * `PostRepository.searchPage`: pages of bounded work that may stop early, continue where they
 * stopped, and together visit every match exactly once. With the fixture's `budgetedPosts` (a
 * repository on the same store whose pages read only a few posts), early stops are made to
 * happen and checked; the walk is checked on the fixture's own repository either way. Part of
 * `postRepositoryContract`.
 */
export function boundedSearchContract({ fixture, spec, newAuthor, newPost }: PostContractContext): void {
  describe("searchPage", () => {
    /** 30 posts by one author, one in five matching "needle" (in the title or the content). */
    const sparseMatches = async () => {
      const author = await newAuthor();
      const matching: Post[] = [];
      for (let i = 0; i < 30; i++) {
        const hit = i % 5 === 2;
        const post = await newPost(author, {
          title: hit && i % 2 === 0 ? `a NEEDLE ${i}` : `hay ${i}`,
          content: hit && i % 2 === 1 ? `more hay, then the needle ${i}` : "only hay",
        });
        if (hit) matching.push(post);
      }
      return { author, newestFirst: ids(matching).reverse() };
    };

    for (const [label, repository] of [
      ["with the store's own bound", () => fixture().posts],
      ["with a bound of a few posts", () => fixture().budgetedPosts ?? fixture().posts],
    ] as const) {
      spec(`${label}: following the pages visits every match once, newest first, and ends`, async () => {
        const { author, newestFirst } = await sparseMatches();
        for (const limit of [1, 2, 3, 7]) {
          const pages = await walk(repository(), { limit, authorId: author.id, search: "needle" }, 40);
          expect(pages.flatMap((page) => page.ids)).toEqual(newestFirst);
        }
      });

      spec(`${label}: a page that stops early holds every match above where it stopped`, async () => {
        const { author, newestFirst } = await sparseMatches();
        const pages = await walk(repository(), { limit: 3, authorId: author.id, search: "needle" }, 40);
        for (const page of pages) {
          if (page.ids.length === 3 || page.resumeBelow === undefined) continue;
          const { resumeBelow, beforeId } = page;
          const between = newestFirst.filter(
            (id) => id >= resumeBelow && (beforeId === undefined || id < beforeId),
          );
          expect(page.ids).toEqual(between);
        }
      });
    }

    spec("with a bound of a few posts, a search of sparse matches stops early and continues", async () => {
      const budgeted = fixture().budgetedPosts;
      // Without one the store's own bound is far above these few posts: nothing can stop early.
      if (budgeted === undefined) return;
      const { author, newestFirst } = await sparseMatches();
      const pages = await walk(budgeted, { limit: 3, authorId: author.id, search: "needle" }, 40);
      expect(pages.some((page) => page.ids.length < 3 && page.resumeBelow !== undefined)).toBe(true);
      expect(pages.flatMap((page) => page.ids)).toEqual(newestFirst);
      // A search no post matches ends too, through pages that hold nothing.
      const none = await walk(budgeted, { limit: 3, authorId: author.id, search: "absent" }, 40);
      expect(none.flatMap((page) => page.ids)).toEqual([]);
    });

    spec(
      "over posts of megabytes, a page of a one-character search reads at most its bytes of text, and following nextCursor reaches every match once, in order, to null",
      async () => {
        const bytesOf = fixture().postsWithSearchBytes;
        const bytes = bytesOf === undefined ? DEFAULT_SEARCH_BYTES : 5 * 1024 * 1024;
        const posts = bytesOf === undefined ? fixture().posts : bytesOf(bytes);
        // Five posts of 45% of the bytes each: two fit in a page, a third does not. The third
        // oldest lacks the term, so that one page holds a post it read and did not keep.
        const author = await newAuthor();
        const filler = "ab ".repeat(Math.ceil((0.45 * bytes) / 3));
        const written: Post[] = [];
        for (let i = 0; i < 5; i++) {
          written.push(
            await newPost(author, {
              title: `big ${i}`,
              content: i === 2 ? filler : i % 2 === 0 ? `${filler}Q` : `q${filler}`,
            }),
          );
        }
        const newestFirst = [...written].reverse();
        const matching = ids(newestFirst.filter((post) => post.content.toLowerCase().includes("q")));

        const seen: number[] = [];
        const cursors: (string | null)[] = [];
        let beforeId: number | undefined;
        for (let page = 0; page <= written.length; page++) {
          const listed = await listPosts(
            { posts },
            {
              q: "q",
              size: "20",
              userId: author.id,
              ...(beforeId === undefined ? {} : { cursor: cursors.at(-1) as string }),
            },
          );
          if (!listed.ok) throw new Error(JSON.stringify(listed.error));
          const { nextCursor } = listed.value;
          seen.push(...ids(listed.value.posts));
          cursors.push(nextCursor);
          // What the page read: the author's posts from where it stopped (or the oldest, at the
          // end) up to its cursor. Within the bytes, or one post alone (a page always reads one).
          const stop = nextCursor === null ? 0 : (decodeCursor(nextCursor) as number);
          const read = newestFirst.filter(
            (post) => post.id >= stop && (beforeId === undefined || post.id < beforeId),
          );
          const readBytes = read.reduce((sum, post) => sum + postTextBytes(post), 0);
          if (read.length > 1) expect(readBytes).toBeLessThanOrEqual(bytes);
          expect(read.length).toBeGreaterThan(0);
          if (nextCursor === null) break;
          beforeId = decodeCursor(nextCursor);
        }
        expect(seen).toEqual(matching);
        expect(cursors.at(-1)).toBeNull();
        // Short pages with a cursor after them: the bytes, not the size, ended them.
        expect(cursors.length).toBeGreaterThan(1);
      },
    );

    spec(
      "a match whose content is large comes whole, or as an outline of the post with its content's size",
      async () => {
        const author = await newAuthor();
        const content = `${"가나다 ".repeat(20_000)}the needle`;
        const large = await newPost(author, { title: "large", content });
        const small = await newPost(author, { title: "small", content: "a needle" });
        const read = await fixture().posts.searchPage({ limit: 3, authorId: author.id, search: "needle" });
        expect(ids(read.posts)).toEqual([small.id, large.id]);
        expect(read.posts[0]).toStrictEqual(small);
        const answered = read.posts[1];
        if (answered !== undefined && !isWhole(answered)) {
          const { content: _, ...rest } = large;
          expect(answered).toStrictEqual({ ...rest, contentBytes: new TextEncoder().encode(content).length });
        } else expect(answered).toStrictEqual(large);
      },
    );

    spec("with a bound of a few posts, listPage still fills its pages", async () => {
      const posts = fixture().budgetedPosts ?? fixture().posts;
      const { author, newestFirst } = await sparseMatches();
      expect(ids(await posts.listPage({ limit: 3, authorId: author.id, search: "needle" }))).toEqual(
        newestFirst.slice(0, 3),
      );
      expect(await posts.listPage({ limit: 20, authorId: author.id })).toHaveLength(20);
    });
  });
}
