import { isWhole, type PostPageQuery, type ReadPost } from "@posts/domain";
import { parseInt8 } from "../../connection/type-parsers.js";
import type { PostCache } from "../../post-cache/post-cache.js";
import { type ReadRow, toReadPost } from "../../rows/post-row.js";
import type { PageReads } from "./page-reads.js";
import type { PostLookups } from "./post-lookups.js";
import type { ListedRow } from "./read-statements.js";

/**
 * Reads pages with a {@link PostCache}: while recent pages were mostly cached, a page lists only
 * its posts' ids and versions and reads in full just the posts the cache lacks at those versions;
 * otherwise it reads the page in full and takes the cached object for each post the cache holds at
 * its version. Either way the posts a page lists are the same objects from one page to the next,
 * and a page's posts are stored only when the cache admits the page. Every statement is one of
 * {@link ReadStatements}, so a hot standby may answer it.
 */
export class CachedPages {
  readonly #cache: PostCache;
  readonly #pages: PageReads;
  readonly #lookups: PostLookups;

  /**
   * `pages` reads the pages; `lookups` the posts the cache lacks, by id, so that pages asked for
   * at once that lack the same posts read them in one statement.
   */
  constructor(cache: PostCache, pages: PageReads, lookups: PostLookups) {
    this.#cache = cache;
    this.#pages = pages;
    this.#lookups = lookups;
  }

  /** `PostRepository.listPage` through the cache. */
  async listPage(query: PostPageQuery): Promise<readonly ReadPost[]> {
    const cache = this.#cache;
    const { inFull, listing } = this.#pages.page(query);
    // U+0000 cannot occur in a search, so the key tells every page apart.
    const admitted = cache.admits(
      `${query.limit}\u0000${query.beforeId}\u0000${query.authorId}\u0000${query.search}`,
    );
    if (!cache.readsThrough) return preferCached(cache, await inFull(), admitted);

    const listed = await listing();
    const posts: (ReadPost | undefined)[] = [];
    let missing: number[] | undefined;
    for (const row of listed) {
      const id = parseInt8(row.id);
      const post = cache.lookUp(id, row.updated_at.getTime());
      if (post === undefined) {
        missing ??= [];
        missing.push(id);
      }
      posts.push(post);
    }
    cache.notePage(missing === undefined);
    if (missing === undefined) return posts as ReadPost[];
    const rows = await this.#lookups.findAll(missing);
    // A post deleted between the two statements leaves a hole: read the page again, whole.
    if (rows.includes(undefined)) return (await inFull()).map(toReadPost);
    const read = new Map<number, ReadPost>();
    for (const row of rows as ReadRow[]) {
      // Possibly a newer version than listed, if it changed in between: as a page read a moment
      // later. The cached object when another page asked at once stored this version already.
      const id = parseInt8(row.id);
      let post: ReadPost | undefined = cache.peek(id, row.updated_at.getTime());
      if (post === undefined) {
        post = toReadPost(row);
        // An outline is no post to keep: its content is read whole for each answer, and dropped.
        if (admitted && isWhole(post)) cache.store(post);
      }
      read.set(id, post);
    }
    return posts.map((post, i) => post ?? (read.get(parseInt8((listed[i] as ListedRow).id)) as ReadPost));
  }
}

/**
 * The posts of a page read in full, each the cached object when the cache holds that version;
 * the others are stored when the page is `admitted` (see `PostCache.admits`).
 */
function preferCached(cache: PostCache, rows: readonly ReadRow[], admitted: boolean): ReadPost[] {
  let allCached = true;
  const posts = rows.map((row) => {
    const cached = cache.lookUp(parseInt8(row.id), row.updated_at.getTime());
    if (cached !== undefined) return cached;
    allCached = false;
    const post = toReadPost(row);
    if (admitted && isWhole(post)) cache.store(post);
    return post;
  });
  cache.notePage(allCached);
  return posts;
}
