import type { IdempotencyKeyUse, NewPost, Post, PostRepository, User, UserRepository } from "@posts/domain";
import { answerForUsedKey, checkOwnedWrite, err, matchesPageQuery, nextUpdatedAt, ok } from "@posts/domain";

/**
 * Users, posts and idempotency keys in Maps: an adapter of the domain's repository ports written
 * outside the posts project. Records are replaced, never changed, so what a caller holds stays as
 * it got it; and no method awaits between reading and writing, so each one is atomic.
 */
export function mapRepositories(): { posts: PostRepository; users: UserRepository } {
  const users = new Map<number, User>();
  const posts = new Map<number, Post>(); // insertion order is id order
  // By `${authorId} ${key}`: a key is visible ASCII, so the space cannot be part of it.
  const keys = new Map<string, IdempotencyKeyUse & { readonly authorId: number }>();
  const ids = { user: 0, post: 0 }; // the last ones given
  const byEmail = (email: string) =>
    [...users.values()].find((u) => u.email.toLowerCase() === email.toLowerCase());
  const create = ({ authorId, ...text }: NewPost): Post | undefined => {
    const email = users.get(authorId)?.email;
    if (email === undefined) return undefined;
    const post = { ...text, id: ++ids.post, updatedAt: text.createdAt, author: { id: authorId, email } };
    posts.set(post.id, post);
    return post;
  };
  return {
    users: {
      async create(fields) {
        if (byEmail(fields.email) !== undefined) return err("email-taken");
        const user = { ...fields, id: ++ids.user };
        users.set(user.id, user);
        return ok(user);
      },
      findByEmail: async (email) => byEmail(email),
      findById: async (id) => users.get(id),
      async delete(id) {
        for (const post of posts.values()) if (post.author.id === id) posts.delete(post.id);
        for (const [slot, use] of keys) if (use.authorId === id) keys.delete(slot);
        return users.delete(id);
      },
    },
    posts: {
      create: async (post) => create(post),
      async createIdempotently(post, { key, expiresAt }) {
        const slot = `${post.authorId} ${key}`;
        const answer = answerForUsedKey(keys.get(slot), post);
        if (answer !== undefined) return answer;
        const created = create(post); // a gone author took their keys along: step 1 shows here
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
    },
  };
}
