import type { Post, PostRepository, User, UserRepository } from "@posts/domain";
import { err, nextUpdatedAt, ok } from "@posts/domain";

/**
 * Users and posts in two Maps: an adapter of the domain's repository ports written outside the
 * posts project. Records are replaced, never changed, so what a caller holds stays as it got it.
 */
export function mapRepositories(): { posts: PostRepository; users: UserRepository } {
  const users = new Map<number, User>();
  const posts = new Map<number, Post>(); // insertion order is id order
  const ids = { user: 0, post: 0 }; // the last ones given
  const byEmail = (email: string) =>
    [...users.values()].find((u) => u.email.toLowerCase() === email.toLowerCase());
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
        return users.delete(id);
      },
    },
    posts: {
      async create({ authorId, ...rest }) {
        const email = users.get(authorId)?.email;
        if (email === undefined) return undefined;
        const post = { ...rest, id: ++ids.post, updatedAt: rest.createdAt, author: { id: authorId, email } };
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
        const old = posts.get(id);
        if (old?.author.id !== authorId) return err(old ? "not-author" : "not-found");
        const post = { ...old, ...changes, updatedAt: nextUpdatedAt(old.updatedAt, now) };
        posts.set(id, post);
        return ok(post);
      },
      async delete({ id, authorId }) {
        const old = posts.get(id);
        if (old?.author.id !== authorId) return err(old ? "not-author" : "not-found");
        posts.delete(id);
        return ok(undefined);
      },
    },
  };
}
