import type { IdempotencyKeyUse, NewPost, Post, PostRepository } from "@posts/domain";
import { answerForUsedKey, checkOwnedWrite, err, matchesPageQuery, nextUpdatedAt, ok } from "@posts/domain";

/**
 * This service's posts and idempotency keys, in Maps behind the domain's `PostRepository` port;
 * the authors are its own accounts, never deleted, so no post or key outlives its author. A post
 * is replaced, never changed, so what a caller holds stays as it got it; and no method awaits
 * between reading and writing, so each one is atomic.
 */
export function mapPostStore(accounts: ReadonlyMap<number, string>): PostRepository {
  const posts = new Map<number, Post>(); // insertion order is id order
  // By `${authorId} ${key}`: a key is visible ASCII, so the space cannot be part of it.
  const keys = new Map<string, IdempotencyKeyUse>();
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
    async createIdempotently(post, { key, expiresAt }) {
      const slot = `${post.authorId} ${key}`;
      const answer = answerForUsedKey(keys.get(slot), post);
      if (answer !== undefined) return answer;
      const created = create(post);
      if (created === undefined) return err("author-gone");
      keys.set(slot, { ...post, postId: created.id, expiresAt });
      return ok({ id: created.id, replayed: false });
    },
    async deleteExpiredIdempotencyKeys(now) {
      const before = keys.size;
      for (const [slot, use] of keys) if (use.expiresAt <= now) keys.delete(slot);
      return before - keys.size;
    },
    findById: async (id) => posts.get(id),
    async listPage(query) {
      const selected = [...posts.values()].filter((post) => matchesPageQuery(post, query));
      return selected.reverse().slice(0, query.limit); // newest first
    },
    async update({ changes, now, ...target }) {
      const found = checkOwnedWrite(posts.get(target.id), target);
      if (!found.ok) return found;
      const post = { ...found.value, ...changes, updatedAt: nextUpdatedAt(found.value.updatedAt, now) };
      posts.set(post.id, post);
      return ok(post);
    },
    async delete(target) {
      const found = checkOwnedWrite(posts.get(target.id), target);
      if (found.ok) posts.delete(target.id);
      return found.ok ? ok(undefined) : found;
    },
  };
}
