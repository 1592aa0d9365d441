import type { Post } from "@posts/domain";
import { LRUCache } from "lru-cache";
import { estimatedBytes } from "./post-cache.js";

/** How much a {@link CurrentPosts} may hold. */
export interface CurrentPostsOptions {
  /** Most bytes the posts held may take, as `estimatedBytes` counts them. At least 1. */
  readonly maxBytes: number;
  /** A post estimated larger than this is never held. Default: a sixteenth of `maxBytes`. */
  readonly maxPostBytes?: number;
}

/** A read in progress, as {@link CurrentPosts.readStarting} answered it. */
export type ReadTicket = number | undefined;

/**
 * The current version of posts, by id, for a database that this process alone writes (the
 * embedded one: PGlite opens its data directory in one process): what it holds is the post as
 * the last acknowledged write of this process left it, so a lookup by id can answer without a
 * statement, and a GET of one post need not wait behind a long statement of another request on
 * the embedded database's one session (docs/operations.md#on-a-postgresql-server).
 *
 * It stays exact because every write to `posts` tells it before it is acknowledged: a creation
 * or an update stores the post it returned, a deletion (of a post, or of a user with their
 * posts) forgets it. A write's answer reaches this thread after the statement committed, so in
 * between a lookup may still answer the version before it, which no client has yet been told is
 * gone: never older than an acknowledged write. A post read by a statement is stored only when
 * no write started or was in flight between the statement's request and its answer, so that a
 * read racing a write never stores the version the write replaced. A write that fails forgets
 * everything, as whether it committed is then unknown.
 *
 * Bounded by bytes (least recently used go first) and by the size of one post, as `PostCache`.
 */
export class CurrentPosts {
  readonly #posts: LRUCache<number, Post>;
  /** Writes begun since this was made: a read stores its post only if none began meanwhile. */
  #writesBegun = 0;
  #writesInFlight = 0;
  readonly #maxPostBytes: number;

  constructor(options: CurrentPostsOptions) {
    if (!(Number.isSafeInteger(options.maxBytes) && options.maxBytes >= 1)) {
      throw new RangeError(`maxBytes must be a positive integer, got ${options.maxBytes}`);
    }
    const maxPostBytes = options.maxPostBytes ?? Math.max(1, Math.floor(options.maxBytes / 16));
    this.#maxPostBytes = Math.min(maxPostBytes, options.maxBytes);
    this.#posts = new LRUCache<number, Post>({
      maxSize: options.maxBytes,
      maxEntrySize: this.#maxPostBytes,
      sizeCalculation: estimatedBytes,
    });
  }

  /** The current version of post `id` when it is held, else `undefined` (then ask the database). */
  get(id: number): Post | undefined {
    return this.#posts.get(id);
  }

  /** Called before a read's statement is requested; hand the answer to {@link readDone}. */
  readStarting(): ReadTicket {
    return this.#writesInFlight === 0 ? this.#writesBegun : undefined;
  }

  /** Stores `post`, read by a statement requested at `ticket`, if no write raced it. */
  readDone(ticket: ReadTicket, post: Post): void {
    if (ticket !== undefined && ticket === this.#writesBegun && this.#writesInFlight === 0) this.#store(post);
  }

  /**
   * Runs `write` (a statement that may change posts) counted as in flight; a failure forgets
   * every post held, as the write may have committed before it failed.
   */
  async writing<T>(write: () => Promise<T>): Promise<T> {
    this.#writesBegun++;
    this.#writesInFlight++;
    try {
      return await write();
    } catch (error) {
      this.#posts.clear();
      throw error;
    } finally {
      this.#writesInFlight--;
    }
  }

  /** Stores `post` as written (created or updated) by a write that committed. */
  written(post: Post): void {
    this.#store(post);
  }

  /** Forgets post `id`, deleted. */
  deleted(id: number): void {
    this.#posts.delete(id);
  }

  /** Forgets every post of user `authorId`, deleted with them. */
  authorDeleted(authorId: number): void {
    for (const [id, post] of this.#posts.entries()) {
      if (post.author.id === authorId) this.#posts.delete(id);
    }
  }

  /** How many posts are held. */
  get size(): number {
    return this.#posts.size;
  }

  // Versions only move forward: an answer handled late never replaces a later version.
  #store(post: Post): void {
    // Counted as at least a byte a character: a post of megabytes is turned away before
    // estimatedBytes reads all of its text. Its earlier version, if held, is no longer current.
    if (post.content.length > this.#maxPostBytes) {
      this.#posts.delete(post.id);
      return;
    }
    const held = this.#posts.peek(post.id);
    if (held === undefined || held.updatedAt.getTime() <= post.updatedAt.getTime()) {
      this.#posts.set(post.id, post);
    }
  }
}
