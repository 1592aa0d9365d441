import type { NewPost, Post, PostRepository } from "@posts/domain";
import { applyOwnedUpdate, checkOwnedWrite, IdempotencyKeyMemory, ok, pageReaders } from "@posts/domain";

/**
 * This service's posts, in a Map behind the domain's `PostRepository` port, deciding by the rules
 * `@posts/domain` exports for stores that decide in memory. The authors are its own accounts, never
 * deleted, so no post or idempotency key outlives its author. A post is replaced, never changed,
 * so what a caller holds stays as it got it; and no method awaits between reading and writing, so
 * each one is atomic. Its posts half is the one in examples/contract-tests: each example installs
 * and reads on its own, so neither imports the other.
 */
export function mapPostStore(accounts: ReadonlyMap<number, string>): PostRepository {
  const posts = new Map<number, Post>();
  const keys = new IdempotencyKeyMemory();
  let lastId = 0;
  const create = ({ authorId, ...text }: NewPost): Post | undefined => {
    const email = accounts.get(authorId);
    if (email === undefined) return undefined;
    const post = { id: ++lastId, ...text, updatedAt: text.createdAt, author: { id: authorId, email } };
    posts.set(post.id, post);
    return post;
  };
  return {
    create: async (post) => create(post),
    createIdempotently: async (post, key) => keys.createIdempotently(post, key, create),
    deleteExpiredIdempotencyKeys: async (now) => keys.forgetExpired(now),
    findById: async (id) => posts.get(id),
    // A Map holds every content whole, so it never answers an outline and reads whole alike.
    findWhole: async (id) => posts.get(id),
    ...pageReaders(() => posts.values()),
    async update(update) {
      const updated = applyOwnedUpdate(posts.get(update.id), update);
      if (updated.ok) posts.set(update.id, updated.value);
      return updated;
    },
    async delete(target) {
      const found = checkOwnedWrite(posts.get(target.id), target);
      if (found.ok) posts.delete(target.id);
      return found.ok ? ok(undefined) : found;
    },
  };
}
