import type {
  CreatedPost,
  OwnedWriteFailure,
  PostDeletion,
  PostPageQuery,
  PostRepository,
  PostUpdate,
  SearchPageQuery,
} from "./ports/post-repository.js";
import { type NewPost, nextUpdatedAt, type Post } from "./post.js";
import { utf8Bytes } from "./post-change-event.js";
import { err, ok, type Result } from "./result.js";

// Decisions of `PostRepository` as pure functions, for stores that make them in memory (the testing
// kit's, a Map of an embedding service): each rule stated once, where a database states it in SQL.
// The idempotency keys such a store remembers are `IdempotencyKeyMemory`'s, beside this file.

/**
 * Whether `post` is one of the posts `query` selects, before its order and `limit` apply: an id
 * below `beforeId`, written by `authorId`, and `search` found as a substring of the title or the
 * content. The search folds ASCII letters only, the narrowest case-insensitivity the port allows
 * (as PostgreSQL's ILIKE does in the C locale), and matches every other character, `%`, `_` and
 * `\` included, as itself.
 */
export function matchesPageQuery(
  post: Pick<Post, "id" | "author" | "title" | "content">,
  query: PostPageQuery,
): boolean {
  return pageFilter(query)(post);
}

/** {@link matchesPageQuery} for one query, its search folded once for every post it is asked about. */
function pageFilter(
  query: PostPageQuery,
): (post: Pick<Post, "id" | "author" | "title" | "content">) => boolean {
  const { beforeId, authorId } = query;
  const search = query.search === undefined ? undefined : foldAscii(query.search);
  return (post) => {
    if (beforeId !== undefined && post.id >= beforeId) return false;
    if (authorId !== undefined && post.author.id !== authorId) return false;
    if (search === undefined) return true;
    return foldAscii(post.title).includes(search) || foldAscii(post.content).includes(search);
  };
}

/**
 * The page `query` selects from `posts`, given in any order: those {@link matchesPageQuery} keeps,
 * newest first (id descending), at most `query.limit` of them. What `PostRepository.listPage`
 * answers when `posts` are all the store holds. One pass that keeps only the page so far, so a
 * store of many posts is neither copied nor sorted for a page of a few.
 */
export function selectPage<P extends Pick<Post, "id" | "author" | "title" | "content">>(
  posts: Iterable<P>,
  query: PostPageQuery,
): P[] {
  const { limit } = query;
  const matches = pageFilter(query);
  const page: P[] = []; // id descending
  for (const post of posts) {
    if (page.length === limit && (limit === 0 || post.id <= (page[limit - 1] as P).id)) continue;
    if (!matches(post)) continue;
    let at = page.length;
    while (at > 0 && (page[at - 1] as P).id < post.id) at--;
    page.splice(at, 0, post);
    if (page.length > limit) page.pop();
  }
  return page;
}

/**
 * How many posts a search page reads at most, by default, in a store that bounds it by posts
 * read (`PostRepository.searchPage`): a full page of 20 for any term in one post in 150 or more,
 * while a page that reads them all stays within tens of milliseconds on PostgreSQL.
 */
export const DEFAULT_SEARCH_BUDGET = 3000;

/**
 * How many bytes of text (title and content in UTF-8) a search page reads at most, by default,
 * besides {@link DEFAULT_SEARCH_BUDGET} posts: 4 MiB. Posts may be megabytes each, so a bound in
 * posts alone lets one page read gigabytes; 3,000 posts of a kilobyte and a half still fit, so a
 * page of ordinary posts stops at the posts' bound as before. What a page reads beyond it is one
 * post: the first, which it always reads, so that every page moves on.
 */
export const DEFAULT_SEARCH_BYTES = 4 * 1024 * 1024;

/**
 * The search page `query` selects from `posts`, given in any order, reading at most `budget` of
 * them (a positive integer, {@link DEFAULT_SEARCH_BUDGET} when absent) and at most `bytes` bytes
 * of their text ({@link postTextBytes}; {@link DEFAULT_SEARCH_BYTES} when absent): the newest
 * posts below `query.beforeId` (by `query.authorId` when given) are read, newest first, until
 * `query.limit` of them match, or `budget` posts are read, or the next one would take the text
 * read past `bytes` (the first is read whatever its size). When the page stops so and older posts
 * remain, it stops at the last post read: `resumeBelow` is its id. What `PostRepository.searchPage`
 * answers when `posts` are all the store holds and it counts its work in posts and bytes read.
 */
export function selectSearchPage<P extends Pick<Post, "id" | "author" | "title" | "content">>(
  posts: Iterable<P>,
  query: SearchPageQuery,
  budget: number = DEFAULT_SEARCH_BUDGET,
  bytes: number = DEFAULT_SEARCH_BYTES,
): { readonly posts: P[]; readonly resumeBelow?: number } {
  const { search, limit, ...window } = query;
  // One more than the budget tells whether older posts remain beyond those read.
  const read = selectPage(posts, { ...window, limit: budget + 1 });
  const matches = pageFilter(query);
  const page: P[] = [];
  let at = 0;
  let readBytes = 0;
  for (; at < Math.min(read.length, budget) && page.length < limit; at++) {
    const post = read[at] as P;
    readBytes += postTextBytes(post);
    if (at > 0 && readBytes > bytes) break;
    if (matches(post)) page.push(post);
  }
  if (page.length === limit || at === read.length) return { posts: page };
  return { posts: page, resumeBelow: (read[at - 1] as P).id };
}

/**
 * The bytes of text a search reads of `post`: its title and content in UTF-8, what PostgreSQL's
 * `octet_length` answers of them in a UTF-8 database.
 */
export function postTextBytes(post: Pick<Post, "title" | "content">): number {
  return utf8Bytes(post.title) + utf8Bytes(post.content);
}

/**
 * `PostRepository.listPage` and `searchPage` for a store that holds its posts in memory:
 * {@link selectPage} and {@link selectSearchPage} over what `posts()` answers at each call, the
 * search reading at most `budget` posts and `bytes` bytes of their text a page.
 */
export function pageReaders(
  posts: () => Iterable<Post>,
  budget: number = DEFAULT_SEARCH_BUDGET,
  bytes: number = DEFAULT_SEARCH_BYTES,
): Pick<PostRepository, "listPage" | "searchPage"> {
  return {
    listPage: async (query) => selectPage(posts(), query),
    searchPage: async (query) => selectSearchPage(posts(), query, budget, bytes),
  };
}

/**
 * `text` with its ASCII letters lower cased and every other character as it is: how a search
 * compares a post with its term (`PostRepository.searchPage`), so that `MORNING` finds `Morning`
 * while the folding of other letters never depends on a locale. A store that indexes the text
 * for a search folds it the same way.
 */
export const foldAscii = (text: string): string =>
  text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());

/**
 * Whether an update or deletion may apply to `post`, the post with the write's id as it stands
 * (`undefined` when there is none), decided in the port's order: "not-found", else "not-author"
 * when `write.authorId` did not write it, else "version-mismatch" when `write.expectedVersions`
 * is given and none of them equals its `updatedAt` to the millisecond. Answers the post when the
 * write may go ahead; the store applies it in the same atomic step.
 */
export function checkOwnedWrite<P extends Pick<Post, "author" | "updatedAt">>(
  post: P | undefined,
  write: Pick<PostDeletion, "authorId" | "expectedVersions">,
): Result<P, OwnedWriteFailure> {
  if (post === undefined) return err("not-found");
  if (post.author.id !== write.authorId) return err("not-author");
  const version = post.updatedAt.getTime();
  const expected = write.expectedVersions;
  if (expected !== undefined && !expected.some((each) => each.getTime() === version)) {
    return err("version-mismatch");
  }
  return ok(post);
}

/**
 * What `update` makes of `post`, the post with the update's id as it stands (`undefined` when
 * there is none): the failure {@link checkOwnedWrite} decides, else a new post value with the
 * present fields of `update.changes` applied, `updatedAt` as {@link nextUpdatedAt} says (a Date of
 * its own, never the caller's `now`), and every other field as it was. The store replaces the post
 * with it in the same atomic step; `post` itself is left unchanged.
 */
export function applyOwnedUpdate(
  post: Post | undefined,
  update: Pick<PostUpdate, "authorId" | "changes" | "now" | "expectedVersions">,
): Result<Post, OwnedWriteFailure> {
  const allowed = checkOwnedWrite(post, update);
  if (!allowed.ok) return allowed;
  const { title, content } = update.changes;
  return ok({
    ...allowed.value,
    title: title ?? allowed.value.title,
    content: content ?? allowed.value.content,
    updatedAt: new Date(nextUpdatedAt(allowed.value.updatedAt, update.now)),
  });
}

/** What a store remembers of an idempotency key it stored a post under. */
export interface IdempotencyKeyUse {
  /** The post the key made; it may have been modified or deleted since. */
  readonly postId: number;
  /** The text the post was made with, which a replay must repeat exactly. */
  readonly title: string;
  readonly content: string;
  /** The instant the key is forgotten. */
  readonly expiresAt: Date;
}

/**
 * What `PostRepository.createIdempotently` answers for `post` when its author's key remembers
 * `use` (step 2 of the port's order): if the use has not expired at `post.createdAt`, the post it
 * made, `replayed: true`, for the same title and content compared exactly, else "key-reused".
 * `undefined` when there is no use or it has expired: the store then stores `post` and
 * remembers the key with it.
 */
export function answerForUsedKey(
  use: IdempotencyKeyUse | undefined,
  post: NewPost,
): Result<CreatedPost, "key-reused"> | undefined {
  if (use === undefined || use.expiresAt.getTime() <= post.createdAt.getTime()) return undefined;
  return use.title === post.title && use.content === post.content
    ? ok({ id: use.postId, replayed: true })
    : err("key-reused");
}
