import type { PostPageQuery, PostRepository } from "../../ports/post-repository.js";

/**
 * Walks the pages of `query` as a client does, each page's `beforeId` the last id of the one
 * before, and answers the ids it saw, in order. After each full page it awaits `between(page)`,
 * where a case creates posts, so that the case sees the walk neither skip nor repeat a post.
 * Stops at a short page, after the page whose last id is at most `stopAtId` (the oldest post a
 * case made, on a store that holds older ones), or after ten pages. Internal to the contract
 * suites.
 */
export async function keysetWalk(
  posts: PostRepository,
  query: Omit<PostPageQuery, "beforeId">,
  between: (page: number) => Promise<unknown>,
  stopAtId = 0,
): Promise<number[]> {
  const seen: number[] = [];
  let beforeId: number | undefined;
  for (let page = 0; page < 10; page++) {
    const listed = await posts.listPage({ ...query, ...(beforeId === undefined ? {} : { beforeId }) });
    seen.push(...listed.map((post) => post.id));
    const last = listed.at(-1);
    if (listed.length < query.limit || last === undefined || last.id <= stopAtId) break;
    beforeId = last.id;
    await between(page);
  }
  return seen;
}
