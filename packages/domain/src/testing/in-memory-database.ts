import type {
  CreatedPost,
  IdempotencyKey,
  IdempotentCreateFailure,
  OwnedWriteFailure,
  PostDeletion,
  PostPageQuery,
  PostRepository,
  PostUpdate,
} from "../ports/post-repository.js";
import type { UserRepository } from "../ports/user-repository.js";
import { type NewPost, nextUpdatedAt, type Post } from "../post.js";
import {
  answerForUsedKey,
  checkOwnedWrite,
  type IdempotencyKeyUse,
  matchesPageQuery,
} from "../post-repository-rules.js";
import { err, ok, type Result } from "../result.js";
import type { NewUser, User } from "../user.js";

interface StoredPost {
  readonly id: number;
  title: string;
  content: string;
  readonly createdAt: Date;
  updatedAt: Date;
  readonly authorId: number;
}

/**
 * Users and posts held in memory, with the same behaviour the contract suites demand of a
 * database: ids that only grow, unique emails, cascade of a user's posts and idempotency keys,
 * atomic (conditional) updates, idempotent creation, search.
 * For tests and for embedding without persistence; nothing survives the process.
 */
export class InMemoryDatabase {
  readonly #users = new Map<number, User>();
  readonly #userIdsByEmail = new Map<string, number>();
  // Insertion order is id order, which the listing relies on.
  readonly #posts = new Map<number, StoredPost>();
  /** Idempotency keys by author, then by key. */
  readonly #keys = new Map<number, Map<string, IdempotencyKeyUse>>();
  #nextUserId = 1;
  #nextPostId = 1;

  /** The post repository over this database. */
  readonly posts: PostRepository = {
    create: async (post) => this.#createPost(post),
    createIdempotently: async (post, key) => this.#createIdempotently(post, key),
    deleteExpiredIdempotencyKeys: async (now) => this.#deleteExpiredKeys(now),
    findById: async (id) => this.#findPost(id),
    listPage: async (query) => this.#listPage(query),
    update: async (update) => this.#updatePost(update),
    delete: async (target) => this.#deletePost(target),
  };

  /** The user repository over this database. */
  readonly users: UserRepository = {
    create: async (user) => this.#createUser(user),
    findByEmail: async (email) => {
      const id = this.#userIdsByEmail.get(email.toLowerCase());
      return id === undefined ? undefined : this.#users.get(id);
    },
    findById: async (id) => this.#users.get(id),
    delete: async (id) => this.#deleteUser(id),
  };

  #createUser(user: NewUser): Result<User, "email-taken"> {
    const key = user.email.toLowerCase();
    if (this.#userIdsByEmail.has(key)) return err("email-taken");
    const stored: User = { id: this.#nextUserId++, ...user, createdAt: new Date(user.createdAt) };
    this.#users.set(stored.id, stored);
    this.#userIdsByEmail.set(key, stored.id);
    return ok(stored);
  }

  #deleteUser(id: number): boolean {
    const user = this.#users.get(id);
    if (user === undefined) return false;
    this.#users.delete(id);
    this.#userIdsByEmail.delete(user.email.toLowerCase());
    this.#keys.delete(id);
    for (const [postId, post] of this.#posts) {
      if (post.authorId === id) this.#posts.delete(postId);
    }
    return true;
  }

  #createPost(post: NewPost): Post | undefined {
    if (!this.#users.has(post.authorId)) return undefined;
    const stored: StoredPost = {
      id: this.#nextPostId++,
      title: post.title,
      content: post.content,
      createdAt: new Date(post.createdAt),
      updatedAt: new Date(post.createdAt),
      authorId: post.authorId,
    };
    this.#posts.set(stored.id, stored);
    return this.#toPost(stored);
  }

  #createIdempotently(post: NewPost, key: IdempotencyKey): Result<CreatedPost, IdempotentCreateFailure> {
    if (!this.#users.has(post.authorId)) return err("author-gone");
    let keys = this.#keys.get(post.authorId);
    const answer = answerForUsedKey(keys?.get(key.key), post);
    if (answer !== undefined) return answer;
    const created = this.#createPost(post) as Post;
    if (keys === undefined) {
      keys = new Map();
      this.#keys.set(post.authorId, keys);
    }
    keys.set(key.key, {
      title: post.title,
      content: post.content,
      postId: created.id,
      expiresAt: new Date(key.expiresAt),
    });
    return ok({ id: created.id, replayed: false });
  }

  #deleteExpiredKeys(now: Date): number {
    let forgotten = 0;
    for (const [authorId, keys] of this.#keys) {
      for (const [key, stored] of keys) {
        if (stored.expiresAt.getTime() > now.getTime()) continue;
        keys.delete(key);
        forgotten++;
      }
      if (keys.size === 0) this.#keys.delete(authorId);
    }
    return forgotten;
  }

  #findPost(id: number): Post | undefined {
    const stored = this.#posts.get(id);
    return stored === undefined ? undefined : this.#toPost(stored);
  }

  #listPage(query: PostPageQuery): Post[] {
    const page: Post[] = [];
    const ids = [...this.#posts.keys()];
    for (let i = ids.length - 1; i >= 0 && page.length < query.limit; i--) {
      const post = this.#toPost(this.#posts.get(ids[i] as number) as StoredPost);
      if (matchesPageQuery(post, query)) page.push(post);
    }
    return page;
  }

  #updatePost(update: PostUpdate): Result<Post, OwnedWriteFailure> {
    const allowed = checkOwnedWrite(this.#findPost(update.id), update);
    if (!allowed.ok) return allowed;
    const stored = this.#posts.get(update.id) as StoredPost;
    if (update.changes.title !== undefined) stored.title = update.changes.title;
    if (update.changes.content !== undefined) stored.content = update.changes.content;
    // A copy: nextUpdatedAt may answer the caller's own `now`, which the caller could mutate later.
    stored.updatedAt = new Date(nextUpdatedAt(stored.updatedAt, update.now));
    return ok(this.#toPost(stored));
  }

  #deletePost(target: PostDeletion): Result<void, OwnedWriteFailure> {
    const allowed = checkOwnedWrite(this.#findPost(target.id), target);
    if (!allowed.ok) return allowed;
    this.#posts.delete(target.id);
    return ok(undefined);
  }

  // Copies, so that a caller mutating what it got cannot change what is stored.
  #toPost(stored: StoredPost): Post {
    const author = this.#users.get(stored.authorId) as User;
    return {
      id: stored.id,
      title: stored.title,
      content: stored.content,
      createdAt: new Date(stored.createdAt),
      updatedAt: new Date(stored.updatedAt),
      author: { id: author.id, email: author.email },
    };
  }
}
