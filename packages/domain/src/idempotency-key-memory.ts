import type { CreatedPost, IdempotencyKey, IdempotentCreateFailure } from "./ports/post-repository.js";
import type { NewPost } from "./post.js";
import { answerForUsedKey, type IdempotencyKeyUse } from "./post-repository-rules.js";
import { err, ok, type Result } from "./result.js";

/**
 * The idempotency keys of a `PostRepository` that keeps them in memory, by author and key, with
 * the part of the port's contract that concerns them: `createIdempotently`, the expiry sweep, and
 * the keys that go with their user. Every method is synchronous, so a store whose own writes are
 * synchronous too gets the port's atomicity for free: no other call runs between looking a key up
 * and remembering it.
 */
export class IdempotencyKeyMemory {
  readonly #byAuthor = new Map<number, Map<string, IdempotencyKeyUse>>();

  /**
   * `PostRepository.createIdempotently`, in the port's order, for a store whose `store(post)`
   * stores the post in the same step and answers it (at least its id), or `undefined` when the
   * author no longer exists. A key the author used before and that has not expired at
   * `post.createdAt` answers as {@link answerForUsedKey} says, and nothing is stored; otherwise
   * `store` runs, and the key is remembered with the new post until `key.expiresAt`, replacing an
   * expired use. An author the store no longer has answers "author-gone" as long as the store
   * calls {@link forgetAuthor} when it deletes a user: a gone author then has no key to answer.
   */
  createIdempotently(
    post: NewPost,
    key: IdempotencyKey,
    store: (post: NewPost) => { readonly id: number } | undefined,
  ): Result<CreatedPost, IdempotentCreateFailure> {
    const keys = this.#byAuthor.get(post.authorId) ?? new Map<string, IdempotencyKeyUse>();
    const answer = answerForUsedKey(keys.get(key.key), post);
    if (answer !== undefined) return answer;
    const created = store(post);
    if (created === undefined) return err("author-gone");
    // Copies, so that a caller changing its own Date later cannot move the expiry.
    const expiresAt = new Date(key.expiresAt);
    keys.set(key.key, { postId: created.id, title: post.title, content: post.content, expiresAt });
    this.#byAuthor.set(post.authorId, keys);
    return ok({ id: created.id, replayed: false });
  }

  /**
   * Forgets every key whose `expiresAt` is at or before `now` and answers how many, as
   * `PostRepository.deleteExpiredIdempotencyKeys` does. The posts the keys made stay.
   */
  forgetExpired(now: Date): number {
    let forgotten = 0;
    for (const [authorId, keys] of this.#byAuthor) {
      for (const [key, use] of keys) {
        if (use.expiresAt.getTime() > now.getTime()) continue;
        keys.delete(key);
        forgotten++;
      }
      if (keys.size === 0) this.#byAuthor.delete(authorId);
    }
    return forgotten;
  }

  /** Forgets every key of the author; a store calls it when it deletes the user, as the port requires. */
  forgetAuthor(authorId: number): void {
    this.#byAuthor.delete(authorId);
  }
}
