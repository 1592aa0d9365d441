import type { NewPost, Post, PostChanges } from "../post.js";
import type { Result } from "../result.js";

/** Which posts a page holds. */
export interface PostPageQuery {
  /** How many posts at most. */
  readonly limit: number;
  /** Only posts with an id below this one; the whole table when absent. */
  readonly beforeId?: number;
  /** Only this author's posts; everyone's when absent. */
  readonly authorId?: number;
}

/** A modification of one post by one user. */
export interface PostUpdate {
  readonly id: number;
  /** The user asking; the update happens only if they wrote the post. */
  readonly authorId: number;
  readonly changes: PostChanges;
  /** The clock's reading; see {@link nextUpdatedAt} for what is stored. */
  readonly now: Date;
}

/** Why a write to an existing post did not happen, in the order they are decided. */
export type OwnedWriteFailure = "not-found" | "not-author";

/**
 * Stores posts. Each method is atomic: it never exposes or leaves a half-applied change.
 */
export interface PostRepository {
  /** Stores a new post and answers it with its id, or `undefined` when the author no longer exists. */
  create(post: NewPost): Promise<Post | undefined>;

  /** The post with this id, or `undefined`. */
  findById(id: number): Promise<Post | undefined>;

  /** Up to `limit` posts, newest first (id descending), filtered as the query says. */
  listPage(query: PostPageQuery): Promise<readonly Post[]>;

  /**
   * Applies only the present fields of `changes` in one atomic step, never a read-modify-write
   * of the whole post, so that concurrent updates of different fields both survive. Stores
   * `updatedAt = nextUpdatedAt(stored updatedAt, now)`; `createdAt` never changes.
   * Fails with "not-found" when no post has the id, else "not-author" when someone else wrote it.
   */
  update(update: PostUpdate): Promise<Result<Post, OwnedWriteFailure>>;

  /**
   * Removes the post if `authorId` wrote it. Fails with "not-found" when no post has the id,
   * else "not-author" when someone else wrote it.
   */
  delete(target: {
    readonly id: number;
    readonly authorId: number;
  }): Promise<Result<void, OwnedWriteFailure>>;
}
