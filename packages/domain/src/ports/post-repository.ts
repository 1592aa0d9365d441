import type { NewPost, Post, PostChanges, ReadPost } from "../post.js";
import type { Result } from "../result.js";

/** Which posts a page holds. */
export interface PostPageQuery {
  /** How many posts at most. */
  readonly limit: number;
  /** Only posts with an id below this one; the whole table when absent. */
  readonly beforeId?: number;
  /** Only this author's posts; everyone's when absent. */
  readonly authorId?: number;
  /**
   * Only posts whose title or content contains this text as a substring, ignoring the case of
   * (at least) ASCII letters. Every character matches itself: `%`, `_` and `\` are no
   * wildcards, and Korean, emoji and any other text match exactly as written. Every post when
   * absent; never the empty string (callers leave it out instead).
   */
  readonly search?: string;
}

/** A page of a search: a {@link PostPageQuery} whose `search` is given. */
export type SearchPageQuery = PostPageQuery & { readonly search: string };

/** What `PostRepository.searchPage` read: the matches it found and, when it stopped early, where. */
export interface SearchPageRead {
  /**
   * Matches, newest first (id descending), at most the query's `limit`; those whose content is
   * large may come as outlines, as from `PostRepository.findById`.
   */
  readonly posts: readonly ReadPost[];
  /**
   * Present when the search read as much as one page may before finding `limit` matches: every
   * match with an id from this one up to (not including) the query's `beforeId` is in `posts`,
   * and the search continues with this id as `beforeId`. Absent when `posts` holds `limit`
   * matches (the search continues after the last of them) or every match there is below
   * `beforeId` (the search is over).
   */
  readonly resumeBelow?: number;
}

/**
 * The versions of a post a conditional write may apply to. A post's version is its
 * `updatedAt` instant, which moves strictly forward on every change. Absent: the write is
 * unconditional. Present: the write happens only if the post's current `updatedAt` equals one
 * of these instants (compared to the millisecond), so an empty list matches nothing. The
 * comparison and the write are one atomic step: of several writers naming the same version,
 * exactly one succeeds.
 */
export type ExpectedVersions = readonly Date[];

/** A modification of one post by one user. */
export interface PostUpdate {
  readonly id: number;
  /** The user asking; the update happens only if they wrote the post. */
  readonly authorId: number;
  readonly changes: PostChanges;
  /** The clock's reading; see {@link nextUpdatedAt} for what is stored. */
  readonly now: Date;
  /** When present, the update happens only on one of these versions (see {@link ExpectedVersions}). */
  readonly expectedVersions?: ExpectedVersions;
}

/** A deletion of one post by one user. */
export interface PostDeletion {
  readonly id: number;
  /** The user asking; the deletion happens only if they wrote the post. */
  readonly authorId: number;
  /** When present, the deletion happens only on one of these versions (see {@link ExpectedVersions}). */
  readonly expectedVersions?: ExpectedVersions;
}

/**
 * Why a write to an existing post did not happen, in the order they are decided: no post has
 * the id (also when a concurrent deletion won), someone else wrote it, or its current version
 * is none of the expected ones (also when a concurrent write moved it on).
 */
export type OwnedWriteFailure = "not-found" | "not-author" | "version-mismatch";

/** The idempotency key a post is created under, and how long the repository remembers it. */
export interface IdempotencyKey {
  /** 1 to 255 visible ASCII characters; unique per author, not globally. */
  readonly key: string;
  /** The instant the key is forgotten: from then on it is as if it had never been used. */
  readonly expiresAt: Date;
}

/** The post a creation answers with: the one it made, or the one its idempotency key made before. */
export interface CreatedPost {
  readonly id: number;
  /**
   * True when nothing was created because the key had made this post before (which may have
   * been modified or deleted since); false for a post made by this call.
   */
  readonly replayed: boolean;
}

/** Why an idempotent creation made nothing: the author is gone, or the key made a post with another text. */
export type IdempotentCreateFailure = "author-gone" | "key-reused";

/**
 * Stores posts. Each method is atomic: it never exposes or leaves a half-applied change.
 */
export interface PostRepository {
  /** Stores a new post and answers it with its id, or `undefined` when the author no longer exists. */
  create(post: NewPost): Promise<Post | undefined>;

  /**
   * Stores a new post under an idempotency key of its author, unless the key stands for a post
   * already. Decided in this order, with `post.createdAt` as the current instant:
   * 1. the author no longer exists → "author-gone" (their keys went with them);
   * 2. the author used `key.key` before and it has not expired (`expiresAt` after
   *    `post.createdAt`): the same title and content, compared exactly → that post's id,
   *    `replayed: true`, even if the post has been modified or deleted since; another title or
   *    content → "key-reused";
   * 3. else the post is stored and the key remembered with it until `key.expiresAt`, replacing
   *    an expired use of the key, in one transaction: never one without the other.
   * Concurrent calls with the same author and key, through any number of connections or
   * processes, store exactly one post; the others wait for it and answer it as in step 2.
   */
  createIdempotently(
    post: NewPost,
    key: IdempotencyKey,
  ): Promise<Result<CreatedPost, IdempotentCreateFailure>>;

  /**
   * Forgets every idempotency key whose `expiresAt` is at or before `now`, and answers how many
   * it forgot. Expired keys already act as forgotten; this only reclaims their storage.
   */
  deleteExpiredIdempotencyKeys(now: Date): Promise<number>;

  /**
   * The post with this id, or `undefined`. A store may answer a post whose content is large as
   * a {@link PostOutline} (its threshold is the store's), so that reading it costs no memory of
   * its content until the caller asks for it with {@link findWhole}.
   */
  findById(id: number): Promise<ReadPost | undefined>;

  /** The post with this id, content included whatever its size, or `undefined`. */
  findWhole(id: number): Promise<Post | undefined>;

  /**
   * Up to `limit` posts, newest first (id descending), filtered as the query says: a full page
   * whenever that many posts match, however many posts a search must read to find them. The
   * listing of the service pages searches with {@link searchPage} instead. Posts whose content
   * is large may come as outlines, as from {@link findById}.
   */
  listPage(query: PostPageQuery): Promise<readonly ReadPost[]>;

  /**
   * One page of a search whose work is bounded whatever the text and wherever its matches lie:
   * the matches newest first, up to `limit`, found among a bounded number of the posts below
   * `beforeId` (by `authorId` when given) and of bytes of their text (a store may always read
   * the first whatever its size, so that every page moves on), so a page may hold fewer than
   * `limit` matches, even none, while older matches remain; `resumeBelow` then says where the
   * next page starts
   * (see {@link SearchPageRead}). Following it never repeats nor skips a match, and it is absent
   * once no match is left. The bound is the store's (an option of each implementation). Matches
   * whose content is large may come as outlines, as from {@link findById}: the bytes a page reads
   * to test its posts need not be held for as long as its answer takes to send.
   */
  searchPage(query: SearchPageQuery): Promise<SearchPageRead>;

  /**
   * Applies only the present fields of `changes` in one atomic step, never a read-modify-write
   * of the whole post, so that concurrent updates of different fields both survive. Stores
   * `updatedAt = nextUpdatedAt(stored updatedAt, now)`; `createdAt` never changes.
   * Fails with "not-found" when no post has the id, else "not-author" when someone else wrote it,
   * else "version-mismatch" when `expectedVersions` is given and the post's version is none of them.
   * Answers the post as this update left it (its `updatedAt` is the new version); a post whose
   * content is large may come as a {@link PostOutline}, as from {@link findById}, so that a
   * change of a title does not read megabytes of content back. Its content at that version is
   * then the content this update stored when `changes.content` was given; otherwise only
   * {@link findWhole} can tell it, and only while no later change has moved the post on.
   */
  update(update: PostUpdate): Promise<Result<ReadPost, OwnedWriteFailure>>;

  /**
   * Removes the post if `authorId` wrote it. Fails with "not-found" when no post has the id,
   * else "not-author" when someone else wrote it, else "version-mismatch" when
   * `expectedVersions` is given and the post's version is none of them.
   */
  delete(target: PostDeletion): Promise<Result<void, OwnedWriteFailure>>;
}
