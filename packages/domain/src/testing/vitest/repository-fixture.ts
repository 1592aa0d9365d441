import type { PostRepository } from "../../ports/post-repository.js";
import type { UserRepository } from "../../ports/user-repository.js";

/**
 * The repositories a contract suite exercises. Both must work on the same store, because a
 * post needs a stored author and deleting a user must remove their posts.
 */
export interface RepositoryFixture {
  readonly posts: PostRepository;
  readonly users: UserRepository;
  /**
   * The same store's posts through a repository whose search pages read only a few posts each
   * (a search budget of two or three, where the implementation lets it be set), so that the
   * suite sees searches stop early and continue. Absent: those checks run on `posts`, whose
   * pages rarely stop early on the suite's few posts.
   */
  readonly budgetedPosts?: PostRepository;
  /**
   * The same store's posts through a repository whose search pages read at most `bytes` bytes of
   * text each (title and content in UTF-8, besides their bound in posts), where the
   * implementation lets it be set, so that the suite sees searches of big posts stop within it
   * without writing posts of the default's size. Absent: those checks run on `posts`, taken to
   * read at most `DEFAULT_SEARCH_BYTES`, with posts as big as that asks.
   */
  readonly postsWithSearchBytes?: (bytes: number) => PostRepository;
  /**
   * Releases what opening acquired (a pool, an embedded database). Called once, after the
   * suite's last test; leave it out when the store outlives the suite.
   */
  close?(): Promise<void>;
}

/**
 * Opens the store a contract suite runs against. Called once per suite, before its first
 * test, so an expensive store (an embedded PostgreSQL runs initdb) is opened once. The store
 * need not be empty and is never reset: every test makes its own users and looks only at
 * the rows it made, so the same store may serve several suites, one after the other, or
 * keep rows from an earlier run. What the tests do assume is that nobody else writes to it
 * while a test runs, because the unfiltered listings expect the newest posts to be the
 * test's own.
 */
export type OpenRepositories = () => Promise<RepositoryFixture>;

/** Time limits for slow stores; each defaults to what the vitest configuration says. */
export interface RepositoryContractOptions {
  /** Milliseconds allowed to open and to close the store. */
  readonly hookTimeoutMs?: number;
  /** Milliseconds allowed for each test. */
  readonly testTimeoutMs?: number;
}
