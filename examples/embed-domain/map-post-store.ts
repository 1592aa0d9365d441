import { err, nextUpdatedAt, ok, type Post, type PostRepository } from "@posts/domain";

/**
 * This service's posts, in a Map behind the domain's `PostRepository` port; the authors are its
 * own accounts. A post is replaced, never changed, so what a caller holds stays as it got it.
 */
export function mapPostStore(accounts: ReadonlyMap<number, string>): PostRepository {
  const posts = new Map<number, Post>(); // insertion order is id order
  let lastId = 0;
  const owned = (id: number, authorId: number) => {
    const post = posts.get(id);
    if (post === undefined) return err("not-found" as const);
    return post.author.id === authorId ? ok(post) : err("not-author" as const);
  };
  return {
    async create({ authorId, ...fields }) {
      const email = accounts.get(authorId);
      if (email === undefined) return undefined;
      const post = { id: ++lastId, ...fields, updatedAt: fields.createdAt, author: { id: authorId, email } };
      posts.set(post.id, post);
      return post;
    },
    findById: async (id) => posts.get(id),
    listPage: async ({ limit, beforeId = Number.POSITIVE_INFINITY, authorId }) =>
      [...posts.values()]
        .reverse()
        .filter((post) => post.id < beforeId && (authorId ?? post.author.id) === post.author.id)
        .slice(0, limit),
    async update({ id, authorId, changes, now }) {
      const found = owned(id, authorId);
      if (!found.ok) return found;
      const post = { ...found.value, ...changes, updatedAt: nextUpdatedAt(found.value.updatedAt, now) };
      posts.set(id, post);
      return ok(post);
    },
    async delete({ id, authorId }) {
      const found = owned(id, authorId);
      if (found.ok) posts.delete(id);
      return found.ok ? ok(undefined) : found;
    },
  };
}
