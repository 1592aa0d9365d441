import type {
  CreatedPost,
  IdempotencyKey,
  IdempotentCreateFailure,
  NewPost,
  OwnedWriteFailure,
  Post,
  PostDeletion,
  PostPageQuery,
  PostRepository,
  PostUpdate,
  ReadPost,
  Result,
  SearchPageQuery,
  SearchPageRead,
} from "@posts/domain";
import { DEFAULT_SEARCH_BUDGET, DEFAULT_SEARCH_BYTES, isWhole } from "@posts/domain";
import type { Kysely } from "kysely";
import type { RunStatement } from "../connection/direct-statements.js";
import { parseInt8 } from "../connection/type-parsers.js";
import type { CurrentPosts } from "../post-cache/current-posts.js";
import { PostCache, type PostCacheOptions, type PostCacheStats } from "../post-cache/post-cache.js";
import { toPost, toReadPost } from "../rows/post-row.js";
import type { Database } from "../schema/database.js";
import { CachedPages } from "./posts/cached-pages.js";
import { IdempotentCreation } from "./posts/idempotent-creation.js";
import { OwnedWrites } from "./posts/owned-writes.js";
import { PageReads } from "./posts/page-reads.js";
import { PlainCreation } from "./posts/plain-creation.js";
import { PostLookups } from "./posts/post-lookups.js";
import { ReadStatements } from "./posts/read-statements.js";
import { SearchPages } from "./posts/search-pages.js";

/** How a {@link PostgresPostRepository} is set up beyond its database. */
export interface PostgresPostRepositoryOptions {
  /**
   * Keep posts read by pages in memory: a page then reads only its posts' ids and versions while
   * recent pages were mostly cached, and the posts it lists are the same objects from one page to
   * the next. Either a `PostCache` made by the caller (who may then read its stats and ask what it
   * holds) or the bounds of one this repository makes. Absent: no cache, every page read in full.
   * Only for a database whose post ids are never reused (never truncated with RESTART IDENTITY
   * while the repository lives).
   */
  readonly cache?: PostCache | PostCacheOptions;
  /**
   * Where the reads that a hot standby may answer go, outside any transaction: one post by id
   * (`findById`) and pages (`listPage`, with or without a search, through the cache or not).
   * Everything else (creations, updates, deletions, the ownership and version checks inside them,
   * the diagnosis of a write that changed nothing, the sweep of expired keys) runs on the
   * primary `db`. Absent: the reads run on `db` too.
   */
  readonly readStatements?: RunStatement;
  /**
   * How many posts one `searchPage` reads at most along the primary key (a positive integer):
   * the bound of a search page's work. Absent: `DEFAULT_SEARCH_BUDGET`. Tests set a tiny one to
   * see searches stop early.
   */
  readonly searchBudget?: number;
  /**
   * How many bytes of text (title and content, in UTF-8) one `searchPage` reads at most besides
   * (a positive integer), and so answers: the bound of a search page's work on big posts; a page
   * reads its first post whatever its size. Absent: `DEFAULT_SEARCH_BYTES`. Tests set a small
   * one to see searches of big posts stop early.
   */
  readonly searchBytes?: number;
  /**
   * How long, in milliseconds, a search page on a PostgreSQL server goes on asking the
   * partitions of `posts` for matches once it began (see `SearchPages`): it ends after the first
   * statement past this time. 0 asks one partition a page. Absent: `DEFAULT_SEARCH_PAGE_MS`, 150.
   */
  readonly searchPageMs?: number;
  /**
   * Whether a search page on a PostgreSQL server asks the partitions after its walk. Absent or
   * true: it does. False: every page is one walk of at most `searchBudget` posts, as on PGlite,
   * so that a suite sees pages stop early on a handful of posts.
   */
  readonly searchPartitions?: boolean;
  /**
   * The most matches one statement of a search page reads in a partition (an integer of at
   * least 2): a partition with more below the cursor is asked a stretch of its newest ids at a
   * time (see `PartitionSearch`). Absent: 1,024. Tests set a small one to see stretches asked.
   */
  readonly searchStatementMatches?: number;
  /**
   * Called after each change this repository committed (a creation, an update, a deletion; a
   * replayed idempotent creation too, harmlessly): the change event log's `wake`, so that the
   * change's event is numbered at once rather than at the log's periodic check.
   */
  readonly onChange?: () => void;
  /**
   * The current posts, for a database that this process alone writes (the embedded one), given
   * too to the user repository, whose deletions delete posts: a lookup by id that finds its post
   * there answers without a statement. Never for a database another process may write.
   */
  readonly currentPosts?: CurrentPosts;
}

/**
 * `PostRepository` on PostgreSQL (a server through `pg`, or PGlite): a facade over rooms of one
 * concern each, in `posts/`: the reads a standby may answer (`ReadStatements`), lookups by id
 * coalesced into statements of at most 16 per turn of the event loop (`PostLookups`), pages
 * through the cache (`CachedPages`), search pages of bounded work (`SearchPages`), plain and
 * idempotent creation, and the owned writes with their failure diagnosis (`OwnedWrites`). Every
 * change is one statement, so each is atomic without an explicit transaction (an idempotent
 * creation whose key is taken decides in a second statement). Every statement is compiled once,
 * when the repository is made (a page size's on first use). Expects a `Kysely` from
 * `createPostgresDatabase` or `createPgliteDatabase` on a database migrated with
 * `migrateToLatest`, not a transaction: a statement that fails on a taken idempotency key would
 * abort it.
 */
export class PostgresPostRepository implements PostRepository {
  readonly #reads: ReadStatements;
  readonly #lookups: PostLookups;
  readonly #pages: PageReads;
  readonly #searches: SearchPages;
  readonly #cache: PostCache | undefined;
  readonly #cachedPages: CachedPages | undefined;
  readonly #plain: PlainCreation;
  readonly #idempotent: IdempotentCreation;
  readonly #owned: OwnedWrites;
  readonly #onChange: () => void;
  readonly #current: CurrentPosts | undefined;

  constructor(db: Kysely<Database>, options: PostgresPostRepositoryOptions = {}) {
    const { cache } = options;
    this.#cache = cache === undefined || cache instanceof PostCache ? cache : new PostCache(cache);
    this.#reads = new ReadStatements(db, options.readStatements);
    this.#lookups = new PostLookups(this.#reads);
    this.#pages = new PageReads(this.#reads);
    this.#cachedPages =
      this.#cache === undefined ? undefined : new CachedPages(this.#cache, this.#pages, this.#lookups);
    this.#searches = new SearchPages(
      db,
      options.searchBudget ?? DEFAULT_SEARCH_BUDGET,
      options.searchBytes ?? DEFAULT_SEARCH_BYTES,
      options.readStatements,
      this.#cache,
      options.searchPageMs,
      options.searchPartitions,
      options.searchStatementMatches,
    );
    this.#plain = new PlainCreation(db);
    this.#idempotent = new IdempotentCreation(db);
    this.#owned = new OwnedWrites(db);
    this.#current = options.currentPosts;
    this.#onChange = options.onChange ?? (() => {});
  }

  async create(post: NewPost): Promise<Post | undefined> {
    const created = await this.#writing(() => this.#plain.create(post));
    if (created !== undefined) {
      this.#current?.written(created);
      this.#onChange();
    }
    return created;
  }

  async createIdempotently(
    post: NewPost,
    key: IdempotencyKey,
  ): Promise<Result<CreatedPost, IdempotentCreateFailure>> {
    // Answers the id alone: the post is read by id afterwards, and stored then.
    const created = await this.#writing(() => this.#idempotent.create(post, key));
    if (created.ok) this.#onChange();
    return created;
  }

  deleteExpiredIdempotencyKeys(now: Date): Promise<number> {
    return this.#idempotent.forgetExpired(now);
  }

  /**
   * A post whose content is over `OUTLINE_ABOVE_BYTES` (64 KiB) comes as an outline, unless the
   * current posts hold it whole.
   */
  async findById(id: number): Promise<ReadPost | undefined> {
    const current = this.#current;
    const held = current?.get(id);
    // The pages' cached object when it is this version, so that what callers keep beside it
    // (the HTTP adapter's JSON) serves again.
    if (held !== undefined) return this.#cache?.peek(id, held.updatedAt.getTime()) ?? held;
    const ticket = current?.readStarting();
    const row = await this.#lookups.find(id);
    if (row === undefined) return undefined;
    // A post read alone is not cached for pages, so that reading many posts once each does
    // not churn the pages' cache.
    const post = this.#cache?.peek(parseInt8(row.id), row.updated_at.getTime()) ?? toReadPost(row);
    // An outline is no post to hold: its content was not read.
    if (isWhole(post)) current?.readDone(ticket, post);
    return post;
  }

  /** Not cached: the posts read whole this way are those too large to keep. */
  async findWhole(id: number): Promise<Post | undefined> {
    const [row] = await this.#reads.wholeById({ id });
    return row === undefined ? undefined : toPost(row);
  }

  /** Posts whose content is over `OUTLINE_ABOVE_BYTES` (64 KiB) come as outlines. */
  async listPage(query: PostPageQuery): Promise<readonly ReadPost[]> {
    if (this.#cachedPages !== undefined) return this.#cachedPages.listPage(query);
    return (await this.#pages.page(query).inFull()).map(toReadPost);
  }

  searchPage(query: SearchPageQuery): Promise<SearchPageRead> {
    return this.#searches.page(query);
  }

  /** What the cache has done and holds; `undefined` without one. */
  cacheStats(): PostCacheStats | undefined {
    return this.#cache?.stats();
  }

  /**
   * Whether `post` is the object this repository's cache holds for its id, which it answers
   * again for as long as that version is current: what a caller keeps beside such a post (its
   * JSON) serves again. False without a cache.
   */
  holdsCached(post: ReadPost): boolean {
    return this.#cache?.holds(post) ?? false;
  }

  /**
   * A post whose content is over `OUTLINE_ABOVE_BYTES` (64 KiB) after the change comes as an
   * outline, its content not read back.
   */
  async update(update: PostUpdate): Promise<Result<ReadPost, OwnedWriteFailure>> {
    const updated = await this.#writing(() => this.#owned.update(update));
    if (updated.ok) {
      const post = updated.value;
      if (isWhole(post)) {
        // The next page that lists a post it holds finds this version here.
        this.#cache?.replace(post);
        this.#current?.written(post);
      } else {
        // The version held, if any, is no longer current, and this one was not read whole.
        this.#cache?.forget(post.id);
        this.#current?.deleted(post.id);
      }
      this.#onChange();
    }
    return updated;
  }

  async delete(target: PostDeletion): Promise<Result<void, OwnedWriteFailure>> {
    const deleted = await this.#writing(() => this.#owned.delete(target));
    if (deleted.ok) {
      this.#cache?.forget(target.id);
      this.#current?.deleted(target.id);
      this.#onChange();
    }
    return deleted;
  }

  #writing<T>(write: () => Promise<T>): Promise<T> {
    return this.#current === undefined ? write() : this.#current.writing(write);
  }
}
