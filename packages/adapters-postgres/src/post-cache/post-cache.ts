import type { Post, ReadPost } from "@posts/domain";
import { LRUCache } from "lru-cache";

/** How much a {@link PostCache} may hold. */
export interface PostCacheOptions {
  /** Most bytes the cached posts may take, as {@link estimatedBytes} counts them. At least 1. */
  readonly maxBytes: number;
  /** A post estimated larger than this is never cached. Default: a sixteenth of `maxBytes`. */
  readonly maxPostBytes?: number;
  /**
   * Read every page through the cache, whatever recent pages did: for the tests of that path,
   * and for a workload known to read the same pages again. Default false: as recent pages say.
   */
  readonly alwaysThroughCache?: boolean;
}

/**
 * What a {@link PostCache} has done since it was made, and holds now. adapters-http declares the
 * same shape for /metrics, as adapters never import one another; the app checks that they agree.
 */
export interface PostCacheStats {
  /** Posts a page found in the cache at the version it lists. */
  readonly hits: number;
  /** Posts a page did not find in the cache at the version it lists, and read in full. */
  readonly misses: number;
  /** Pages read as ids and versions first, their posts then taken from the cache. */
  readonly pagesThroughCache: number;
  /** Pages read in full in one statement, because recent pages were mostly not cached. */
  readonly pagesInFull: number;
  /** Posts held now. */
  readonly posts: number;
  /** What they take, as {@link estimatedBytes} counts it. */
  readonly bytes: number;
}

/**
 * What a composition root and the HTTP side may ask of a {@link PostCache}: whether a post is the
 * very object cached (so what a caller keeps beside it, such as its JSON, serves again for as long
 * as that version is current) and what the cache has done and holds (for metrics). The rest of
 * the cache is the post repository's, which it is handed to.
 */
export interface PostCacheView {
  /** Whether `post` is the very object cached for its id (as a read of the repository answered it). */
  holds(post: ReadPost): boolean;
  /** Counts so far, and what is held now. */
  stats(): PostCacheStats;
}

/**
 * What one cached post is taken to cost, in bytes of memory: its text (title, content, the
 * author's email) as V8 holds it, at one byte a character when the text is Latin-1 and two
 * otherwise; the serialized form a caller may keep beside it for as long as the post is cached
 * (the HTTP adapter keeps its JSON, as many bytes as its UTF-8); and the objects around them.
 * Measured for a post of 437 Latin-1 characters: 1,442 bytes with its JSON kept as a Buffer, 619
 * without, where this says 1,754; for one of 360 characters, mostly Korean: 2,133 with its JSON,
 * where this says 2,456. An ASCII post's JSON, kept as a string, costs less than that.
 */
export function estimatedBytes(post: Post): number {
  const { title, content } = post;
  const email = post.author.email;
  const text = title.length + content.length + email.length;
  const perCharacter = BEYOND_LATIN_1.test(content) || BEYOND_LATIN_1.test(title) ? 2 : 1;
  const utf8 = Buffer.byteLength(title) + Buffer.byteLength(content) + Buffer.byteLength(email);
  return perCharacter * text + utf8 + JSON_EXTRA_BYTES + OBJECT_BYTES;
}

const BEYOND_LATIN_1 = /[\u0100-\uffff]/;
/** What a post's JSON holds besides its text: property names, ids, timestamps, escapes. */
const JSON_EXTRA_BYTES = 120;
/** The post, its author, two dates, the strings' headers, the cache's bookkeeping and the caller's. */
const OBJECT_BYTES = 760;

/**
 * How quickly the judgement of recent pages follows the workload: each page weighs 1/32 in a
 * moving average of "every post of the page was cached".
 */
const PAGE_WEIGHT = 1 / 32;
/** Pages are read through the cache once the average passes this... */
const THROUGH_ABOVE = 0.6;
/** ...and in full again once it falls below this (apart, so that a workload in between does not flap). */
const IN_FULL_BELOW = 0.3;
/**
 * How many different pages count as recently read (between this many and twice this many): the
 * posts of a page are cached only when the same page (query) was read recently before.
 */
const RECENT_PAGES = 4096;
/** A page read this often recently may have its posts cached while the cache has room... */
const ADMIT_WITH_ROOM = 2;
/** ...and this often once it is full, when every post it stores evicts one. */
const ADMIT_WHEN_FULL = 4;
/** The cache has room while it holds less than this share of its bound. */
const ROOM_BELOW = 7 / 8;

/**
 * Posts as last read, keyed by id, each valid only at its version. A post's content, title and
 * author are fixed by its id and `updatedAt`: every change moves `updatedAt` strictly forward,
 * an author's email never changes, and ids are never reused. So a cached post is the current one
 * exactly when the database lists its id at its version, and the cache needs no invalidation, on
 * one instance or many. Bounded by bytes (least recently used go first) and by the size of one
 * post.
 *
 * It also decides how pages are read: through the cache (ids and versions first, then only the
 * posts not cached, in a second statement) while recent pages were mostly cached, in full (one
 * statement, as without a cache) while they were not. And it admits the posts of a page only
 * when the same page was read recently, twice while the cache has room and four times once it is
 * full (a doorkeeper, counting): a workload of ever new pages then costs about what it costs
 * without a cache, hardly filling it and not churning it, while one that reads the same pages
 * again gets them from here from its second or fourth reading on.
 *
 * Made by the composition root and handed both to `PostgresPostRepository` (its `cache` option),
 * which alone reads and fills it, and, as a {@link PostCacheView}, to whatever reports on it.
 */
export class PostCache implements PostCacheView {
  readonly #posts: LRUCache<number, Post>;
  #hits = 0;
  #misses = 0;
  #pagesThroughCache = 0;
  #pagesInFull = 0;
  #recentlyCached = 0;
  #throughCache: boolean;
  readonly #adapts: boolean;
  /** How often each page was read lately, in two generations: a page is recent while it is in either. */
  #recentPages = new Map<string, number>();
  #olderPages = new Map<string, number>();
  readonly #roomBelow: number;

  constructor(options: PostCacheOptions) {
    if (!(Number.isSafeInteger(options.maxBytes) && options.maxBytes >= 1)) {
      throw new RangeError(`maxBytes must be a positive integer, got ${options.maxBytes}`);
    }
    const maxPostBytes = options.maxPostBytes ?? Math.max(1, Math.floor(options.maxBytes / 16));
    this.#posts = new LRUCache<number, Post>({
      maxSize: options.maxBytes,
      maxEntrySize: Math.min(maxPostBytes, options.maxBytes),
      sizeCalculation: estimatedBytes,
    });
    this.#roomBelow = options.maxBytes * ROOM_BELOW;
    this.#throughCache = options.alwaysThroughCache === true;
    this.#adapts = !this.#throughCache;
  }

  /** Whether the next page should be read through the cache (true) or in full (false). */
  get readsThrough(): boolean {
    return this.#throughCache;
  }

  /**
   * The cached post `id` if it is at `version` (ms since the epoch), counted as a hit, else
   * `undefined`, counted as a miss. A hit becomes the most recently used.
   */
  lookUp(id: number, version: number): Post | undefined {
    const post = this.#posts.get(id);
    if (post !== undefined && post.updatedAt.getTime() === version) {
      this.#hits++;
      return post;
    }
    this.#misses++;
    return undefined;
  }

  /** The cached post `id` if it is at `version`, else `undefined`; counts nothing, changes no order. */
  peek(id: number, version: number): Post | undefined {
    const post = this.#posts.peek(id);
    return post !== undefined && post.updatedAt.getTime() === version ? post : undefined;
  }

  /** Caches `post` as the current version of its id (unless it is larger than one post may be). */
  store(post: Post): void {
    this.#posts.set(post.id, post);
  }

  /**
   * Caches `post` in place of the version of its id held now, if any: a change to a post that
   * pages read keeps being read from here, and a change to one they do not costs nothing.
   */
  replace(post: Post): void {
    if (this.#posts.has(post.id)) this.#posts.set(post.id, post);
  }

  /** Whether `post` is the very object cached for its id (as `lookUp` or `peek` answered it). */
  holds(post: ReadPost): boolean {
    return this.#posts.peek(post.id) === post;
  }

  /**
   * Records that the page `key` names (its query, in any text that tells pages apart) is being
   * read, and answers whether it was read often enough lately for its posts to be stored.
   */
  admits(key: string): boolean {
    let count = this.#recentPages.get(key);
    if (count === undefined) {
      count = this.#olderPages.get(key) ?? 0;
      if (this.#recentPages.size >= RECENT_PAGES) {
        this.#olderPages = this.#recentPages;
        this.#recentPages = new Map();
      }
    }
    this.#recentPages.set(key, ++count);
    return count >= (this.#posts.calculatedSize < this.#roomBelow ? ADMIT_WITH_ROOM : ADMIT_WHEN_FULL);
  }

  /** Drops post `id`, which no longer exists. */
  forget(id: number): void {
    this.#posts.delete(id);
  }

  /**
   * Records how a page was read and whether every one of its posts was cached at the listed
   * version, which decides how the next pages are read.
   */
  notePage(allCached: boolean): void {
    const throughCache = this.#throughCache;
    if (throughCache) this.#pagesThroughCache++;
    else this.#pagesInFull++;
    this.#recentlyCached += ((allCached ? 1 : 0) - this.#recentlyCached) * PAGE_WEIGHT;
    if (
      this.#adapts &&
      (throughCache ? this.#recentlyCached < IN_FULL_BELOW : this.#recentlyCached > THROUGH_ABOVE)
    ) {
      this.#throughCache = !throughCache;
    }
  }

  /** Counts so far, and what is held now. */
  stats(): PostCacheStats {
    return {
      hits: this.#hits,
      misses: this.#misses,
      pagesThroughCache: this.#pagesThroughCache,
      pagesInFull: this.#pagesInFull,
      posts: this.#posts.size,
      bytes: this.#posts.calculatedSize,
    };
  }
}
