import { IdempotencyKeyMemory } from "../idempotency-key-memory.js";
import type {
  OwnedWriteFailure,
  PostDeletion,
  PostRepository,
  PostUpdate,
} from "../ports/post-repository.js";
import type { UserRepository } from "../ports/user-repository.js";
import type { NewPost, Post } from "../post.js";
import {
  applyOwnedUpdate,
  checkOwnedWrite,
  DEFAULT_SEARCH_BUDGET,
  DEFAULT_SEARCH_BYTES,
  selectPage,
  selectSearchPage,
} from "../post-repository-rules.js";
import { err, ok, type Result } from "../result.js";
import type { NewUser, User } from "../user.js";
import { InMemoryChangeEventLog } from "./in-memory-change-event-log.js";

// A copy, so that a caller mutating what it got cannot change what is stored.
const copy = (post: Post): Post => ({
  ...post,
  createdAt: new Date(post.createdAt),
  updatedAt: new Date(post.updatedAt),
  author: { ...post.author },
});

/**
 * Users and posts held in memory, with the same behaviour the contract suites demand of a
 * database: ids that only grow, unique emails, cascade of a user's posts and idempotency keys,
 * atomic (conditional) updates, idempotent creation, search, and an event for every change of a
 * post (`events`).
 * For tests and for embedding without persistence; nothing survives the process.
 */
export class InMemoryDatabase {
  readonly #users = new Map<number, User>();
  readonly #userIdsByEmail = new Map<string, number>();
  // Records are replaced, never changed, and handed out as copies.
  readonly #posts = new Map<number, Post>();
  readonly #keys = new IdempotencyKeyMemory();
  #nextUserId = 1;
  #nextPostId = 1;

  /** Every change of a post, numbered as it is made. */
  readonly events = new InMemoryChangeEventLog();

  /** The post repository over this database, its search pages bounded as the constructor says. */
  readonly posts: PostRepository;

  /**
   * `searchBudget`: how many posts one search page reads at most (`PostRepository.searchPage`),
   * a positive integer; {@link DEFAULT_SEARCH_BUDGET} when absent. `searchBytes`: how many bytes
   * of their text it reads at most besides (`selectSearchPage`), a positive integer;
   * {@link DEFAULT_SEARCH_BYTES} when absent.
   */
  constructor(options: { readonly searchBudget?: number; readonly searchBytes?: number } = {}) {
    this.posts = this.postsWithSearchBudget(
      options.searchBudget ?? DEFAULT_SEARCH_BUDGET,
      options.searchBytes ?? DEFAULT_SEARCH_BYTES,
    );
  }

  /**
   * Another post repository over this same database whose search pages read at most `budget`
   * posts each (a positive integer) and `bytes` bytes of their text ({@link DEFAULT_SEARCH_BYTES}
   * when absent): tests use tiny ones to see searches stop early.
   */
  postsWithSearchBudget(budget: number, bytes: number = DEFAULT_SEARCH_BYTES): PostRepository {
    if (!(Number.isSafeInteger(budget) && budget >= 1)) {
      throw new RangeError("the search budget must be a positive integer");
    }
    if (!(Number.isSafeInteger(bytes) && bytes >= 1)) {
      throw new RangeError("the search's bytes must be a positive integer");
    }
    return {
      create: async (post) => this.#createPost(post),
      createIdempotently: async (post, key) =>
        this.#keys.createIdempotently(post, key, (p) => this.#createPost(p)),
      deleteExpiredIdempotencyKeys: async (now) => this.#keys.forgetExpired(now),
      findById: async (id) => this.#findPost(id),
      findWhole: async (id) => this.#findPost(id),
      listPage: async (query) => selectPage(this.#posts.values(), query).map(copy),
      searchPage: async (query) => {
        const { posts, resumeBelow } = selectSearchPage(this.#posts.values(), query, budget, bytes);
        return { posts: posts.map(copy), ...(resumeBelow === undefined ? {} : { resumeBelow }) };
      },
      update: async (update) => this.#updatePost(update),
      delete: async (target) => this.#deletePost(target),
    };
  }

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
    this.#keys.forgetAuthor(id);
    for (const [postId, post] of this.#posts) {
      if (post.author.id !== id) continue;
      this.#posts.delete(postId);
      this.events.record({ type: "post.deleted", postId, occurredAt: new Date() });
    }
    return true;
  }

  #createPost(post: NewPost): Post | undefined {
    const author = this.#users.get(post.authorId);
    if (author === undefined) return undefined;
    const stored: Post = {
      id: this.#nextPostId++,
      title: post.title,
      content: post.content,
      createdAt: new Date(post.createdAt),
      updatedAt: new Date(post.createdAt),
      author: { id: author.id, email: author.email },
    };
    this.#posts.set(stored.id, stored);
    this.events.record({ type: "post.created", post: copy(stored), occurredAt: stored.updatedAt });
    return copy(stored);
  }

  #findPost(id: number): Post | undefined {
    const stored = this.#posts.get(id);
    return stored === undefined ? undefined : copy(stored);
  }

  #updatePost(update: PostUpdate): Result<Post, OwnedWriteFailure> {
    const updated = applyOwnedUpdate(this.#posts.get(update.id), update);
    if (!updated.ok) return updated;
    this.#posts.set(update.id, updated.value);
    this.events.record({
      type: "post.updated",
      post: copy(updated.value),
      occurredAt: updated.value.updatedAt,
    });
    return ok(copy(updated.value));
  }

  #deletePost(target: PostDeletion): Result<void, OwnedWriteFailure> {
    const allowed = checkOwnedWrite(this.#posts.get(target.id), target);
    if (!allowed.ok) return allowed;
    this.#posts.delete(target.id);
    this.events.record({ type: "post.deleted", postId: target.id, occurredAt: new Date() });
    return ok(undefined);
  }
}
