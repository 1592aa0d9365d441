import { foldAscii, type ReadPost, type SearchPageQuery } from "@posts/domain";
import { type Kysely, sql } from "kysely";
import { type PreparedStatement, prepare } from "../../connection/prepare.js";
import { POSTS_PARTITION_SPAN, partitionOf } from "../../partitions/post-partitions.js";
import type { ReadRow } from "../../rows/post-row.js";
import type { Database } from "../../schema/database.js";
import { containsPattern, contentOrSizeOf } from "./read-statements.js";
import { bothVariants, type Variants, variant } from "./variants.js";

/** The values of one partition's statement. */
interface PartitionValues {
  readonly pattern: string;
  readonly below: number;
  /** The lowest id asked about (ranged statements only). */
  readonly from: number;
  readonly wanted: number;
  /** The most bytes of text of the matches answered. */
  readonly bytes: number;
  /**
   * For a term the trigram indexes cannot serve: its characters as `post_chars` lists a post's
   * (a term of one character), or its pairs of characters as `post_char_pairs` does (longer ones).
   */
  readonly elements?: readonly string[];
  readonly authorId?: number;
}

/**
 * A match of a partition's statement: `fits` false for the first one past the bytes, without its
 * content; `upto` the bytes of text of the matches up to and including it; `found` how many
 * matches the statement read (at most its limit, which then says there may be more), and
 * `highest` the highest id among them. `unwalked`: whether a walk (`walk`) met a post of more than
 * {@link WALKED_POST_BYTES} in its stretch, which it answers as a row without matching it: the
 * stretch is then asked through the term's index instead.
 */
type PartitionRow = ReadRow & {
  readonly fits: boolean;
  readonly upto: number | string;
  readonly found: number | string;
  readonly highest: number | string;
  readonly unwalked: boolean;
};

/**
 * Which index finds a term's candidates: the trigram indexes of the title and the content, the
 * index of each post's characters (a term of one character), or that of its pairs of characters
 * (a longer term from which pg_trgm extracts no trigram).
 */
export type TermLookup = "trigrams" | "chars" | "charPairs";

/**
 * Statements by `authorId`, then by the index that finds the term's candidates, or `walk`: none,
 * each post of a small stretch read along the primary key's bitmap and matched.
 */
type TermStatements<Kind extends string> = Variants<
  Readonly<Record<Kind, PreparedStatement<PartitionValues, PartitionRow>>>
>;

/**
 * One partition's statements: `whole` asks every post of it below the cursor through the term's
 * index alone; `ranged` only those from an id up, through the term's index and the primary key's
 * together (a bitmap of each, and their intersection).
 */
interface PartitionStatements {
  readonly whole: TermStatements<TermLookup>;
  readonly ranged: TermStatements<TermLookup | "walk">;
}

/**
 * The most matches one partition statement reads, by default: it reads them in the order of the
 * table (oldest first), so a statement that reads this many stops there, and the newest matches
 * are asked of a stretch of ids below the cursor small enough to hold fewer. Why: a statement
 * that read every match of a partition where most posts match (a word of the oldest hundred
 * thousand posts of ten million) read and sorted all of them to answer twenty.
 */
export const DEFAULT_STATEMENT_MATCHES = 1024;

/** The fewest ids a ranged statement asks about. */
const LEAST_RANGE = 64;

/**
 * A stretch of at most this many times the matches a statement reads is walked (each of its posts
 * matched) rather than looked up through the term's index. Why: such a stretch is asked only of a
 * partition where the term's matches are dense, and there the term's index is a bitmap of most of
 * the partition's posts, read whole for each stretch however small the stretch; walking its few
 * thousand posts costs a few milliseconds.
 */
const WALKED_STRETCH = 4;

/**
 * The most bytes of text (title and content) of a post that a walk matches. Why: a walk reads
 * every post of its stretch, where the term's index reads only the candidates; PostgreSQL keeps
 * text up to about this much in the row itself, and moves or compresses a larger one, whose
 * reading costs a detoast and up to `BODY_LIMIT` of text. A stretch of 4,096 posts of at most
 * this much reads at most 8 MiB; one that holds a larger post is asked through the term's index,
 * as a larger stretch is.
 */
const WALKED_POST_BYTES = 2048;

/** The values of the statement that asks whether any post below a cursor holds a term's pairs of words. */
interface PairsValues {
  readonly below: number;
  readonly pairs: readonly string[];
  readonly authorId?: number;
}

/** What the partitions answered: the newest matches below where they started, and where the page continues. */
export interface PartitionMatches {
  readonly posts: ReadPost[];
  /** Absent when the page is full or no older post is left to ask about. */
  readonly resumeBelow?: number;
}

/**
 * Whether the trigram indexes can find the candidates of `search`: whether `pg_trgm` extracts at
 * least one trigram from its pattern (`%search%`). It takes each run of letters and digits of the
 * term as a word, padded with two spaces in front when something other than a letter or digit
 * precedes it in the term (the word starts there) and one behind when something follows it (the
 * word ends there), and extracts the trigrams of the padded word: a run of three, or of two that
 * starts or ends within the term (`ng. 73`: "ng " and " 73", words ending in "ng" and starting
 * with "73"), or of one that starts within it. From any other term (`ab`, `z`, `3 `) it extracts
 * none, and the trigram index would answer every post of the partition as a candidate; the index
 * of the posts' characters or of their pairs of characters answers such a term instead (see
 * {@link lookupOf}). Letters and digits as
 * Unicode classes them, as `pg_trgm` does in a database of a UTF-8 locale.
 */
export function hasTrigrams(search: string): boolean {
  return wordsOf(search).some((word) => word.padded >= 3);
}

/**
 * Whether `pg_trgm` extracts from the pattern of `search` a trigram of two letters or digits or
 * more: one of a run of three, or of a run of two that starts or ends within the term (see
 * {@link hasTrigrams}). A trigram of one ("  s", a word that starts with `s`; " s ", the word
 * `s`) is in most posts, so a term whose trigrams are all such (`7 s`) has every post of a
 * partition for a candidate through the trigram indexes.
 */
export function hasTrigramOfTwo(search: string): boolean {
  return wordsOf(search).some((word) => word.length >= 2 && word.padded >= 3);
}

/**
 * The runs of letters and digits of `search` as `pg_trgm` reads a pattern's words: each one's
 * length in characters, and its length once padded as {@link hasTrigrams} says.
 */
function wordsOf(search: string): { length: number; padded: number }[] {
  return [...search.matchAll(/[\p{L}\p{N}]+/gu)].map((run) => {
    const length = [...run[0]].length;
    const starts = run.index > 0 ? 2 : 0;
    const ends = run.index + run[0].length < search.length ? 1 : 0;
    return { length, padded: length + starts + ends };
  });
}

/**
 * The characters of `search` as `post_chars` lists a post's: each one once, ASCII letters lower
 * cased, as `lower` in the "C" collation does (and as the search's `ILIKE` in "C" folds).
 */
export function lettersOf(search: string): string[] {
  return [...new Set(foldAscii(search))];
}

/**
 * The pairs of consecutive characters of `search` as `post_char_pairs` lists a post's: each pair
 * once, ASCII letters lower cased as in {@link lettersOf}. A post that holds the term holds every
 * one of them; a term of one character has none.
 */
export function charPairsOf(search: string): string[] {
  const chars = [...foldAscii(search)];
  const pairs = new Set<string>();
  for (let i = 0; i + 1 < chars.length; i++) pairs.add(`${chars[i]}${chars[i + 1]}`);
  return [...pairs];
}

/**
 * The index that finds the candidates of `search` in a partition, and what it is asked for: the
 * trigram indexes when pg_trgm extracts a trigram of two letters or digits from the term
 * ({@link hasTrigramOfTwo}); otherwise the index of the posts' characters for a term of one
 * character, and that of their pairs of characters for a longer one (`4 `, `zz`, whose
 * characters alone are often in every post, and `7 s`, whose only trigram, a word that starts
 * with `s`, is in every post, where its pair `7 `, a word that ends in `7`, is not).
 */
export function lookupOf(search: string): { lookup: TermLookup; elements?: readonly string[] } {
  if (hasTrigramOfTwo(search)) return { lookup: "trigrams" };
  const pairs = charPairsOf(search);
  return pairs.length === 0
    ? { lookup: "chars", elements: lettersOf(search) }
    : { lookup: "charPairs", elements: pairs };
}

/**
 * The pairs of words of `search` as `post_word_pairs` lists a post's: for each two words the term
 * shows one after the other (runs of characters other than the space, apart by spaces), the
 * first one's last three characters, a space and the second one's first three, ASCII letters
 * lower cased, each pair once. Only the pairs whose sides the term shows: a word's end when the
 * term shows three characters of it or the whole word (a space in the term before it), its start
 * likewise (a space after it); the term's first word may be the end of a longer word and its last
 * the start of one. A post that holds the term holds each of these pairs in its title or in its
 * content, where it holds the term.
 */
export function wordPairsOf(search: string): string[] {
  const words = [...foldAscii(search).matchAll(/[^ ]+/g)].map((run) => ({
    chars: [...run[0]],
    startsWithin: run.index > 0,
    endsWithin: run.index + run[0].length < search.length,
  }));
  const pairs = new Set<string>();
  for (let i = 0; i + 1 < words.length; i++) {
    const [word, next] = [words[i], words[i + 1]];
    if (word === undefined || next === undefined) continue;
    // Both words are apart by spaces in the term, so the first ends and the next starts within it.
    if ((word.chars.length >= 3 || word.startsWithin) && (next.chars.length >= 3 || next.endsWithin)) {
      pairs.add(`${word.chars.slice(-3).join("")} ${next.chars.slice(0, 3).join("")}`);
    }
  }
  return [...pairs];
}

/**
 * The matches of a search below a cursor, asked of the partitions of `posts` one at a time,
 * newest first, each through its own indexes: the trigram indexes for a term with a trigram of
 * two letters or digits ({@link hasTrigramOfTwo}), the index of the posts' characters or of their
 * pairs for the others ({@link lookupOf}). Why partitions: a bitmap of a term over the whole
 * table reads the posting lists of its trigrams over every post, so its cost follows how common
 * the trigrams are in the whole table, not how many matches the page needs; over one partition it
 * is bounded by the partition's posts (at most {@link POSTS_PARTITION_SPAN}), and the newest
 * partitions come first, so a term whose matches are old or lie in one stretch of ids is answered
 * by the partition that holds them, not by hundreds of pages that walk over the ones that do not.
 */
export class PartitionSearch {
  readonly #db: Kysely<Database>;
  readonly #post: (row: ReadRow) => ReadPost;
  /** By partition. */
  readonly #statements = new Map<number, PartitionStatements>();
  /** Whether any post below the cursor holds a term's pairs of words, by `authorId`. */
  readonly #holds: Variants<PreparedStatement<PairsValues, { holds: boolean }>>;

  /** The most matches one partition statement reads. */
  readonly #statementMatches: number;
  /** The fewest ids a ranged statement asks about: fewer than it reads matches. */
  readonly #leastRange: number;
  /** The most ids a stretch has that is walked rather than looked up through the term's index. */
  readonly #walkedIds: number;

  /**
   * `post`: a matching row as a post, or an outline when its content is large.
   * `statementMatches`: the most matches one partition statement reads, an integer of at least 2.
   */
  constructor(
    db: Kysely<Database>,
    post: (row: ReadRow) => ReadPost,
    statementMatches = DEFAULT_STATEMENT_MATCHES,
  ) {
    if (!(Number.isSafeInteger(statementMatches) && statementMatches >= 2)) {
      throw new RangeError("the matches one search statement reads must be an integer of at least 2");
    }
    this.#db = db;
    this.#post = post;
    this.#statementMatches = statementMatches;
    this.#leastRange = Math.min(LEAST_RANGE, statementMatches - 1);
    this.#walkedIds = WALKED_STRETCH * statementMatches;
    this.#holds = bothVariants((byAuthor) => this.#holdsStatement(byAuthor));
  }

  /**
   * The newest `wanted` matches of `query` below `below`, asked of the partitions newest first
   * until `wanted` are found, the oldest partition was asked, or `pageMs` milliseconds have
   * passed since the first statement (checked after each statement that answered every match
   * of its stretch: a statement is bounded by its partition and by the matches it reads, not
   * stopped); as many of them, newest first, as fit in `bytes` bytes of text. A partition with
   * more matches than one statement reads is asked in stretches of its ids, newest first.
   * `resumeBelow` is where the page continues: below the last stretch asked, or below the last
   * match that fit in the bytes.
   *
   * One transaction on one connection of the database's own pool, read only: its settings
   * (`SET LOCAL`, sent with `BEGIN` in one text), the partitions' named statements, then
   * `ROLLBACK`. The settings leave the bitmap of the partition's index as the only plan (a walk
   * of the primary key filtered row by row is what the partitions exist to avoid: the planner,
   * which cannot know how many posts match a term, picks it for a `LIMIT` it expects to fill
   * early), planned once for every term (`force_generic_plan`), without JIT or parallel workers,
   * whose start costs more than a partition's bitmap.
   */
  async matches(
    query: SearchPageQuery,
    below: number,
    wanted: number,
    bytes: number,
    pageMs: number,
  ): Promise<PartitionMatches> {
    const { authorId, search } = query;
    const { lookup, elements } = lookupOf(search);
    const pairs = wordPairsOf(search);
    const values = {
      pattern: containsPattern(search),
      ...(elements === undefined ? {} : { elements }),
      ...(authorId === undefined ? {} : { authorId }),
    };
    return this.#db.connection().execute(async (connection) => {
      await sql
        .raw(
          `BEGIN READ ONLY; SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off;
           SET LOCAL plan_cache_mode = force_generic_plan;
           SET LOCAL jit = off; SET LOCAL max_parallel_workers_per_gather = 0`,
        )
        .execute(connection);
      let answer: PartitionMatches;
      try {
        const followed =
          pairs.length === 0 ||
          (await this.#anyHolds(connection, {
            below,
            pairs,
            ...(authorId === undefined ? {} : { authorId }),
          }));
        // No post below the cursor holds every pair of words of the term: none matches, and the
        // search ends here.
        answer = followed
          ? await this.#ask(connection, lookup, values, below, wanted, bytes, pageMs)
          : { posts: [] };
      } catch (error) {
        // The statement's failure is the answer; a connection it broke fails the ROLLBACK too.
        await sql
          .raw("ROLLBACK")
          .execute(connection)
          .catch(() => {});
        throw error;
      }
      await sql.raw("ROLLBACK").execute(connection);
      return answer;
    });
  }

  // Each statement reads at most `#statementMatches` matches, in the table's order (oldest
  // first). One that read that many says only that its stretch holds more, up to the highest it
  // read (`known`); what lies between that and the cursor is unknown. Asked next: once per
  // partition, the newest ids that should hold half a statement's matches at the density just
  // seen (a partition where most posts match answers there); after that, and after a stretch
  // with no match, the newer half of the unknown ids, so that a stretch of matches anywhere
  // below the cursor is found in a few halvings. A stretch that held fewer answered every match
  // in it; the next one is as large as should hold half a statement's matches at its density,
  // and never more than half of the unknown ids. The next partition is asked whole first.
  async #ask(
    connection: Kysely<Database>,
    lookup: TermLookup,
    values: Omit<PartitionValues, "below" | "from" | "wanted" | "bytes">,
    below: number,
    wanted: number,
    bytes: number,
    pageMs: number,
  ): Promise<PartitionMatches> {
    const posts: ReadPost[] = [];
    const limit = this.#statementMatches;
    let left = bytes;
    let to = below;
    /** Ids of the next stretch; undefined: the rest of the partition, by the term's index alone. */
    let range: number | undefined;
    /** The highest of the matches a statement read when it read its limit: more lie at or below it. */
    let known = 0;
    /** Whether the density of a full statement was tried at the top of this partition. */
    let guessed = false;
    const started = performance.now();
    for (let k = partitionOf(to - 1); k >= 0; ) {
      const bottom = k * POSTS_PARTITION_SPAN + 1;
      const from = range === undefined ? bottom : Math.max(bottom, to - range);
      const asked = { ...values, below: to, from, wanted: wanted - posts.length, bytes: left };
      const { whole, ranged } = this.#partition(k);
      let rows: PartitionRow[];
      if (range === undefined) rows = await whole[variant(values.authorId)][lookup](asked, connection);
      else {
        const statements = ranged[variant(values.authorId)];
        const walkable = to - from <= this.#walkedIds;
        rows = walkable ? await statements.walk(asked, connection) : [];
        // A stretch too large to walk, or one holding a post too large to walk, is asked through
        // the term's index.
        if (!walkable || rows[0]?.unwalked === true) {
          rows = await statements[lookup](asked, connection);
        }
      }
      const found = rows.length === 0 ? 0 : Number(rows[0]?.found);
      // Half of the ids between the known matches and the cursor: more than none.
      const halfUnknown = () => Math.max(this.#leastRange, Math.ceil((to - known) / 2));
      if (found >= limit) {
        known = Number(rows[0]?.highest);
        // A stretch of fewer ids than the limit holds fewer matches: the narrowing ends.
        range = guessed ? halfUnknown() : Math.max(this.#leastRange, Math.floor((known - from + 1) / 2));
        guessed = true;
        continue;
      }
      for (const row of rows) {
        // The first match past the bytes: the page continues below the last one that fit.
        if (!row.fits) return { posts, resumeBelow: posts.at(-1)?.id ?? to };
        posts.push(this.#post(row));
      }
      const last = rows.at(-1);
      if (last !== undefined) left -= Number(last.upto);
      if (posts.length >= wanted) return { posts };
      to = from;
      if (to === bottom) {
        k -= 1;
        range = undefined;
        known = 0;
        guessed = false;
      } else {
        // The ids that should hold half a statement's matches at the density just seen.
        const atDensity = Math.floor(((range as number) * limit) / (2 * Math.max(1, found)));
        // Below the known matches, at that density; above them, no more than half of the
        // unknown ids, however few this stretch held. Still ranged to the partition's end: asked
        // whole, it would read the oldest matches again.
        if (to <= known) range = Math.max(this.#leastRange, atDensity);
        else range = found === 0 ? halfUnknown() : Math.min(atDensity, halfUnknown());
      }
      if (to > 1 && performance.now() - started >= pageMs) return { posts, resumeBelow: to };
    }
    return { posts };
  }

  /**
   * Whether a post below `below` (by `authorId`, when given) holds every one of `pairs`, or may
   * (a content longer than `post_word_pairs` reads).
   */
  async #anyHolds(connection: Kysely<Database>, values: PairsValues): Promise<boolean> {
    const [row] = await this.#holds[variant(values.authorId)](values, connection);
    return row?.holds === true;
  }

  // One question for the page, on `posts` through the index of pairs of words of every
  // partition: for a term whose words are each in every post but never one after the other, so
  // that every post is a candidate of its trigrams, it costs a look at each partition's index
  // (12 ms on ten million posts) where the partitions' statements would check every post (12 s).
  // PostgreSQL stops at the first post found: a term of common pairs costs one partition's list
  // of them. Asked once a page rather than in each partition's statement: there, a pair in every
  // post cost each partition that whole list, more than the trigram bitmap of a term with a
  // rare trigram. `id + 0` keeps the primary key out of the plan, as in the partitions'.
  #holdsStatement(byAuthor: boolean) {
    const db = this.#db;
    return prepare(db, (p: Required<PairsValues>) => {
      const author = byAuthor ? sql`AND user_id = ${p.authorId}` : sql``;
      return sql<{ holds: boolean }>`
        SELECT EXISTS (SELECT FROM posts WHERE id + 0 < ${p.below} ${author}
                         AND (post_word_pairs(title, content) @> ${p.pairs}::text[]
                              OR post_word_pairs(title, content) @> '{""}'::text[])) AS holds`.compile(db);
    });
  }

  #partition(k: number): PartitionStatements {
    let statements = this.#statements.get(k);
    if (statements === undefined) {
      const lookups = (byAuthor: boolean, ranged: boolean) => ({
        trigrams: this.#statement(k, byAuthor, "trigrams", ranged),
        chars: this.#statement(k, byAuthor, "chars", ranged),
        charPairs: this.#statement(k, byAuthor, "charPairs", ranged),
      });
      statements = {
        whole: bothVariants((byAuthor) => lookups(byAuthor, false)),
        ranged: bothVariants((byAuthor) => ({
          ...lookups(byAuthor, true),
          walk: this.#statement(k, byAuthor, "walk", true),
        })),
      };
      this.#statements.set(k, statements);
    }
    return statements;
  }

  // On the partition itself, not on `posts`: a generic plan of the parent would lock every
  // partition at each execution before pruning them. In the whole statement `id + 0` keeps the
  // primary key out of the plan (its bitmap of the ids below the cursor would be most of the
  // partition); in the ranged one the primary key's bitmap of the stretch is what bounds it. The
  // matches are read in the table's order up to the statement's limit, counted, then ordered by
  // id alone, and only the page's are read whole; they are answered while their text adds up to
  // the bytes given, by a running sum of `octet_length`, which reads only the values' headers,
  // and the first past the bytes comes without its text, to say so. The trigram indexes are
  // built in "C", as the match is written; the indexes of characters and of pairs of characters
  // list each post's lower-cased in "C", and a post whose content is longer than what they read
  // holds the element '' and is always a candidate. There the match is written `IS TRUE`, which
  // no index serves, so that the planner never adds a trigram bitmap of a term with no trigram
  // (every post of the partition) to the bitmap of characters or pairs; and so a walked stretch
  // (`walk`) has the primary key's bitmap alone, each of its posts matched but those of more than
  // WALKED_POST_BYTES, which it answers unmatched (`unwalked`), their size read from the values'
  // headers: the `OR` tests the size first, and PostgreSQL evaluates an `OR`'s terms in order.
  #statement(k: number, byAuthor: boolean, lookup: TermLookup | "walk", ranged: boolean) {
    const db = this.#db;
    const partition = sql.table(`posts_p${k}`);
    const limit = sql.lit(this.#statementMatches);
    const unwalked =
      lookup === "walk"
        ? sql`octet_length(title) + octet_length(content) > ${sql.lit(WALKED_POST_BYTES)}`
        : sql`false`;
    return prepare(db, (p: Required<PartitionValues>) => {
      const author = byAuthor ? sql`AND user_id = ${p.authorId}` : sql``;
      const ids = ranged ? sql`id >= ${p.from} AND id < ${p.below}` : sql`id + 0 < ${p.below}`;
      const match = sql`title COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\'
                        OR content COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\'`;
      const elements =
        lookup === "chars" ? sql`post_chars(title, content)` : sql`post_char_pairs(title, content)`;
      const where =
        lookup === "trigrams"
          ? sql`(${match})`
          : lookup === "walk"
            ? sql`(${unwalked} OR (${match}) IS TRUE)`
            : sql`(${elements} @> ${p.elements}::text[] OR ${elements} @> '{""}'::text[]) AND (${match}) IS TRUE`;
      return sql<PartitionRow>`
        SELECT q.id, q.title, ${contentOrSizeOf("q", sql<boolean>`q.fits`)}, q.created_at, q.updated_at,
               q.user_id AS author_id, (SELECT u.email FROM users u WHERE u.id = q.user_id) AS author_email,
               q.fits, q.upto, q.found, q.highest, q.unwalked
          FROM (SELECT s.*, s.upto <= ${p.bytes}::int8 AS fits
                  FROM (SELECT m.*, sum(octet_length(m.title) + octet_length(m.content))
                                      OVER (ORDER BY m.id DESC ROWS UNBOUNDED PRECEDING) AS upto
                          FROM (SELECT c.*, count(*) OVER () AS found, max(c.id) OVER () AS highest,
                                       bool_or(c.large) OVER () AS unwalked
                                  FROM (SELECT id, title, content, created_at, updated_at, user_id,
                                               ${unwalked} AS large
                                          FROM ${partition}
                                          WHERE ${ids} ${author} AND ${where}
                                          LIMIT ${limit}) c
                                 ORDER BY c.id DESC LIMIT ${p.wanted}) m) s) q
         ORDER BY q.id DESC`.compile(db);
    });
  }
}
