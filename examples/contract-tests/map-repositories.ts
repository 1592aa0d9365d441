import type { NewPost, Post, PostRepository, User, UserRepository } from "@posts/domain";
import { applyOwnedUpdate, checkOwnedWrite, err, IdempotencyKeyMemory, ok, pageReaders } from "@posts/domain";

/**
 * Users, posts and idempotency keys in memory: an adapter of the domain's repository ports written
 * outside the posts project, deciding by the rules `@posts/domain` exports for such stores. Records
 * are replaced, never changed, so what a caller holds stays as it got it; and no method awaits
 * between reading and writing, so each one is atomic. Its posts half is examples/embed-domain's
 * store: each example installs and reads on its own, so neither imports the other.
 */
export function mapRepositories(): { posts: PostRepository; users: UserRepository } {
  const users = new Map<number, User>();
  const posts = new Map<number, Post>();
  const keys = new IdempotencyKeyMemory();
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
        keys.forgetAuthor(id); // so that a gone author's createIdempotently answers "author-gone"
        return users.delete(id);
      },
    },
    posts: {
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
    },
  };
}
