import { MAX_PAGE_SIZE, type PostPageQuery } from "@posts/domain";
import { type Kysely, type NotNull, type RawBuilder, type SelectQueryBuilder, sql } from "kysely";
import type { RunStatement } from "../../connection/direct-statements.js";
import { type PreparedStatement, prepare } from "../../connection/prepare.js";
import { partitionOf } from "../../partitions/post-partitions.js";
import type { PostRow, ReadRow } from "../../rows/post-row.js";
import type { Database } from "../../schema/database.js";
import { bothVariants, type Variants, variant } from "./variants.js";

/**
 * The largest content, in UTF-8 bytes, that the reads of a post or a page answer with the post;
 * a larger one comes back as its size only (an outline), for the caller to read with `wholeById`
 * when it has room. Why: a page of 100 posts of 16 MiB would otherwise be 1.6 GB in one
 * statement's answer, held at once by the driver, the rows and their JSON. Small posts, the
 * usual ones, stay one statement; `octet_length` of a stored (TOASTed) content reads only its
 * header, not the content.
 */
export const OUTLINE_ABOVE_BYTES = 64 * 1024;

/**
 * The content of the posts' row named `alias` when it is at most {@link OUTLINE_ABOVE_BYTES} and
 * `when` holds (always without it), else null. A larger content is tested where the statement
 * runs, and never leaves the database with the row. `alias` is a name written in this package.
 */
function smallContentOf(alias: string, when?: RawBuilder<boolean>): RawBuilder<string | null> {
  const content = sql.raw(`${alias}.content`);
  const small = isSmallContent(alias);
  return sql<
    string | null
  >`CASE WHEN ${when === undefined ? small : sql`${when} AND ${small}`} THEN ${content} END`;
}

/** Whether the content of the posts' row named `alias` is at most {@link OUTLINE_ABOVE_BYTES}: sent whole. */
function isSmallContent(alias: string): RawBuilder<boolean> {
  return sql<boolean>`octet_length(${sql.raw(`${alias}.content`)}) <= ${sql.lit(OUTLINE_ABOVE_BYTES)}`;
}

/** The size in bytes of the content of the posts' row named `alias`: `octet_length` reads only its header. */
function contentBytesOf(alias: string): RawBuilder<number> {
  return sql<number>`octet_length(${sql.raw(`${alias}.content`)})`;
}

/**
 * The two columns of a {@link ReadRow} that say its content, for a statement written in SQL,
 * of the posts' row named `alias`: `content` ({@link smallContentOf}, with `when`) and
 * `content_bytes`, its size.
 */
export function contentOrSizeOf(alias: string, when?: RawBuilder<boolean>): RawBuilder<unknown> {
  return sql`${smallContentOf(alias, when)} AS content, ${contentBytesOf(alias)} AS content_bytes`;
}

/** What a post statement selects of the post itself but its content. */
const POST_COLUMNS_WITHOUT_CONTENT = [
  "posts.id",
  "posts.title",
  "posts.created_at",
  "posts.updated_at",
  "posts.user_id as author_id",
] as const;

/** The content when it is at most {@link OUTLINE_ABOVE_BYTES}, and its size: a {@link ReadRow}'s. */
const CONTENT_OR_SIZE = [
  smallContentOf("posts").as("content"),
  contentBytesOf("posts").as("content_bytes"),
] as const;

/** What the whole post's statement selects, in the shape of {@link PostRow}. */
const POST_COLUMNS = [
  ...POST_COLUMNS_WITHOUT_CONTENT,
  "posts.content",
  "users.email as author_email",
] as const;

/** What a page lists when read through the cache: each post's id and version. */
export interface ListedRow {
  readonly id: number;
  readonly updated_at: Date;
}

/** A page query with the search turned into an ILIKE pattern. */
export interface PageValues {
  readonly limit: number;
  readonly beforeId?: number;
  readonly authorId?: number;
  readonly pattern?: string;
}

/**
 * The cursors and authors of several pages of one shape (one page size, a cursor or not, an
 * author or not, no search), page by page: an array for each of the two the shape has.
 */
export interface PageBatchValues {
  readonly beforeIds?: readonly number[];
  readonly authorIds?: readonly number[];
}

/** A row of a statement that reads several pages: which page it belongs to, from 1 in the order given. */
export type PageBatchRow<Row> = Row & { readonly page: number };

/** The statements of one page query, with the values to run them with. */
export interface PageReading {
  readonly values: PageValues;
  /** The page's posts in full, in one statement. */
  readonly inFull: PreparedStatement<PageValues, ReadRow>;
  /** Only the ids and versions of the page's posts (see `CachedPages`). */
  readonly listing: PreparedStatement<PageValues, ListedRow>;
  /**
   * `inFull` and `listing` for several pages of this page's shape at once, or `undefined` where
   * one statement serves any number of them already (no cursor and no author: the same page) or
   * where a page is planned for its values (a search) or its size is not one of the pages'.
   */
  readonly batches?: {
    readonly inFull: PreparedStatement<PageBatchValues, PageBatchRow<ReadRow>>;
    readonly listing: PreparedStatement<PageBatchValues, PageBatchRow<ListedRow>>;
  };
}

/** The statements of a page, in full and as ids and versions, by `beforeId`, then `authorId`, then search. */
interface PageStatements {
  readonly inFull: Variants<Variants<Variants<PreparedStatement<PageValues, ReadRow>>>>;
  readonly listing: Variants<Variants<Variants<PreparedStatement<PageValues, ListedRow>>>>;
  /** By `beforeId`, then `authorId`; absent for a statement whose limit is bound (any size). */
  readonly batches?: Variants<Variants<PageReading["batches"]>>;
}

/**
 * Selects a post's columns in the shape of {@link ReadRow}, the author's email as a scalar
 * subquery rather than a join: with a join, a cursor near the end of the index (few rows
 * estimated below it) could make the planner hash the whole users table and sort;
 * this way each row costs one users_pkey lookup whatever the estimates.
 * The foreign key guarantees the user.
 */
function withAuthorEmail(query: SelectQueryBuilder<Database, "posts", object>) {
  return query
    .select((eb) => [
      ...POST_COLUMNS_WITHOUT_CONTENT,
      ...CONTENT_OR_SIZE,
      eb
        .selectFrom("users")
        .select("users.email")
        .whereRef("users.id", "=", "posts.user_id")
        .as("author_email"),
    ])
    .$narrowType<{ author_email: NotNull }>();
}

/** The ILIKE pattern (with `ESCAPE '\'`) of "contains `search`", its wildcards matching themselves. */
export function containsPattern(search: string): string {
  return `%${search.replace(/[\\%_]/g, "\\$&")}%`;
}

/**
 * The post repository's reads that a hot standby may answer: one post by id, and pages (listed
 * in full, as ids and versions, or by ids for the cached pages). Nothing here locks, writes or
 * decides a write, so each statement may see a slightly older snapshot than the primary's and
 * still answer what the port promises of a read. Every statement is compiled once (a page's per
 * page size, on first use) and runs through `run` when given, else on the database's own pool.
 */
export class ReadStatements {
  /** `PostRepository.findById`'s statement: a large content as its size only. */
  readonly findById: PreparedStatement<{ id: number }, ReadRow>;
  /**
   * The post whose content is at most {@link OUTLINE_ABOVE_BYTES}, whole; no row for a larger
   * one, as for none: {@link findById} tells them apart.
   */
  readonly smallById: PreparedStatement<{ id: number }, PostRow>;
  /** `PostRepository.findWhole`'s statement: the content whatever its size. */
  readonly wholeById: PreparedStatement<{ id: number }, PostRow>;
  /** The posts of the given ids, in no order: the cached pages' second statement. */
  readonly byIds: PreparedStatement<{ ids: readonly number[] }, ReadRow>;
  readonly #forSize = new Map<number, PageStatements>();
  readonly #anySize: PageStatements;
  readonly #db: Kysely<Database>;
  readonly #run: RunStatement | undefined;

  /** `run`: where these statements go outside a transaction; the primary's pool when absent. */
  constructor(db: Kysely<Database>, run?: RunStatement) {
    this.#db = db;
    this.#run = run;
    const on = { run };
    // On the post's partition itself, once a post was found there: PostgreSQL 15 prices a
    // generic plan of a partitioned table as the sum of every partition's part, so a statement of
    // `posts` is planned afresh at each execution (GET by id on six partitions: two fifths of the
    // statements a second of the same read on one partition, pgbench), and a generic one would
    // lock every partition at each execution before pruning them. A partition's statement is
    // made only for a partition that held a post, so that no id a client sends names a table
    // that is not there, and the statements stay as many as the partitions.
    const onItsPartition = <Row>(
      byIdFrom: (from: "posts") => PreparedStatement<{ id: number }, Row>,
    ): PreparedStatement<{ id: number }, Row> => {
      const anyPartition = byIdFrom("posts");
      const byPartition = new Map<number, PreparedStatement<{ id: number }, Row>>();
      const firstOnPartition = async (values: { id: number }, transaction?: Kysely<Database>) => {
        const rows = await anyPartition(values, transaction);
        const k = partitionOf(values.id);
        if (rows.length > 0) byPartition.set(k, byIdFrom(`posts_p${k}` as "posts"));
        return rows;
      };
      // Not an async function: a partition's statement answers its own promise, one fewer per GET.
      return (values, transaction) =>
        (byPartition.get(partitionOf(values.id)) ?? firstOnPartition)(values, transaction);
    };
    const joinedFrom = (from: "posts") =>
      db.selectFrom(`${from} as posts`).innerJoin("users", "users.id", "posts.user_id");
    this.findById = onItsPartition((from) =>
      prepare(
        db,
        (p: { id: number }) =>
          joinedFrom(from)
            .select([...POST_COLUMNS_WITHOUT_CONTENT, ...CONTENT_OR_SIZE, "users.email as author_email"])
            .where("posts.id", "=", p.id)
            .compile(),
        on,
      ),
    );
    // The size as a condition, not as two more columns: PostgreSQL measures the content once and
    // sends the row's own columns (the outline's CASE and sizes cost it 2 % of a lookup, pgbench).
    this.smallById = onItsPartition((from) =>
      prepare(
        db,
        (p: { id: number }) =>
          joinedFrom(from)
            .select([...POST_COLUMNS_WITHOUT_CONTENT, "posts.content", "users.email as author_email"])
            .where("posts.id", "=", p.id)
            .where(isSmallContent("posts"))
            .compile(),
        on,
      ),
    );
    this.wholeById = prepare(
      db,
      (p: { id: number }) =>
        db
          .selectFrom("posts")
          .innerJoin("users", "users.id", "posts.user_id")
          .select(POST_COLUMNS)
          .where("posts.id", "=", p.id)
          .compile(),
      on,
    );
    // The ids reach the planner behind a scalar subquery, not as the array itself. Given the
    // array, PostgreSQL prices each execution's own plan by its size and by the partitions it
    // names, which for a few ids is always cheaper than a plan for any ids: it plans afresh at
    // every execution (0.1–0.8 ms on ten partitions, several times the lookups themselves), and
    // which plan it keeps depends on the sizes of the first five. Priced alike, the generic plan
    // is kept from the sixth. Each id is then looked up in its own partition (a nested loop whose
    // Append prunes at each id), where `= ANY($1)` in a generic plan probes every partition.
    this.byIds = prepare(
      db,
      (p: { ids: readonly number[] }) =>
        withAuthorEmail(db.selectFrom("posts"))
          .where(sql<boolean>`posts.id IN (SELECT unnest((SELECT ${p.ids}::int8[])))`)
          .compile(),
      on,
    );
    this.#anySize = this.#pageStatements(undefined);
  }

  /** The statements of the page `query` asks for, and the values to run them with. */
  page(query: PostPageQuery): PageReading {
    const { search, ...rest } = query;
    const values: PageValues = search === undefined ? rest : { ...rest, pattern: containsPattern(search) };
    const before = variant(query.beforeId);
    const byAuthor = variant(query.authorId);
    const searching = variant(search);
    const statements = this.#forLimit(query.limit);
    const batches = search === undefined ? statements.batches?.[before][byAuthor] : undefined;
    return {
      values,
      inFull: statements.inFull[before][byAuthor][searching],
      listing: statements.listing[before][byAuthor][searching],
      ...(batches === undefined ? {} : { batches }),
    };
  }

  #forLimit(limit: number): PageStatements {
    if (!(Number.isSafeInteger(limit) && limit >= 1 && limit <= MAX_PAGE_SIZE + 1)) return this.#anySize;
    let statements = this.#forSize.get(limit);
    if (statements === undefined) {
      statements = this.#pageStatements(limit);
      this.#forSize.set(limit, statements);
    }
    return statements;
  }

  // Keyset pagination: the primary key (or the (user_id, id desc) index with an author)
  // finds the first row below the cursor directly, so a deep page costs what the first does.
  // A search is answered from the trigram indexes on title and content (a bitmap of the
  // candidate rows, rechecked), whose cost follows the matches, not the table, or, for a term
  // in most posts, by walking the primary key until a page is found; which one depends on the
  // term, so a search statement is planned for its values every time (unnamed): a generic plan
  // would walk the whole table for a rare term, or build a bitmap of every post for a common one.
  // The limit is written into the statement, not bound: with LIMIT $n PostgreSQL cannot price a
  // generic plan and plans the statement afresh at every execution. So there
  // is a set of statements per page size, made on first use; sizes are few (1 to 100).
  #pageStatements(limit: number | undefined): PageStatements {
    const db = this.#db;
    const run = this.#run;
    const filtered = <Q extends SelectQueryBuilder<Database, "posts", object>>(
      query: Q,
      p: Required<PageValues>,
      before: boolean,
      byAuthor: boolean,
      searching: boolean,
    ): Q =>
      query
        .$if(before, (q) => q.where("posts.id", "<", p.beforeId))
        .$if(byAuthor, (q) => q.where("posts.user_id", "=", p.authorId))
        .$if(searching, (q) =>
          q.where(
            // In "C", as the trigram indexes are built and as the search pages match.
            sql<boolean>`(posts.title COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\' OR posts.content COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\')`,
          ),
        )
        .orderBy("posts.id", "desc") as Q;
    const limited = <Q extends SelectQueryBuilder<Database, "posts", object>>(
      query: Q,
      p: Required<PageValues>,
    ) => (limit === undefined ? query.limit(p.limit) : query.limit(sql.lit(limit))) as Q;
    const page = (before: boolean, byAuthor: boolean, searching: boolean) =>
      prepare(
        db,
        (p: Required<PageValues>) =>
          limited(
            filtered(withAuthorEmail(db.selectFrom("posts")), p, before, byAuthor, searching),
            p,
          ).compile(),
        { named: !searching, run },
      );
    const listing = (before: boolean, byAuthor: boolean, searching: boolean) =>
      prepare(
        db,
        (p: Required<PageValues>) =>
          limited(
            filtered(
              db.selectFrom("posts").select(["posts.id", "posts.updated_at"]),
              p,
              before,
              byAuthor,
              searching,
            ),
            p,
          ).compile(),
        { named: !searching, run },
      );
    // Several pages in one statement: each page's cursor and author from arrays, the page read
    // by the same index walk as alone (LATERAL, so once per page, and each stops at its limit).
    // Why: under concurrent reads a page's own statement costs PostgreSQL and the server more
    // than its twenty-one index entries (see `PageReads`).
    const batched = <Row>(
      select: (
        query: SelectQueryBuilder<Database, "posts", object>,
      ) => SelectQueryBuilder<Database, "posts", Row>,
      before: boolean,
      byAuthor: boolean,
    ) =>
      prepare(
        db,
        (p: Required<PageBatchValues>) => {
          const onePage = select(db.selectFrom("posts"))
            .$if(before, (q) => q.where("posts.id", "<", sql.ref<number>("k.before_id")))
            .$if(byAuthor, (q) => q.where("posts.user_id", "=", sql.ref<number>("k.author_id")))
            .orderBy("posts.id", "desc")
            .limit(sql.lit(limit));
          const arrays = [
            ...(before ? [sql`${p.beforeIds}::int8[]`] : []),
            ...(byAuthor ? [sql`${p.authorIds}::int8[]`] : []),
          ];
          const columns = [...(before ? ["before_id"] : []), ...(byAuthor ? ["author_id"] : []), "page"];
          return sql<
            PageBatchRow<Row>
          >`select k.page, p.* from unnest(${sql.join(arrays)}) with ordinality as k(${sql.join(columns.map((c) => sql.id(c)))}) cross join lateral (${onePage}) as p`.compile(
            db,
          );
        },
        { run },
      );
    const batches =
      limit === undefined
        ? undefined
        : bothVariants((before) =>
            bothVariants((byAuthor) =>
              before || byAuthor
                ? {
                    inFull: batched<ReadRow>(withAuthorEmail, before, byAuthor),
                    listing: batched<ListedRow>(
                      (q) => q.select(["posts.id", "posts.updated_at"]),
                      before,
                      byAuthor,
                    ),
                  }
                : undefined,
            ),
          );
    return {
      inFull: bothVariants((before) =>
        bothVariants((byAuthor) => bothVariants((searching) => page(before, byAuthor, searching))),
      ),
      listing: bothVariants((before) =>
        bothVariants((byAuthor) => bothVariants((searching) => listing(before, byAuthor, searching))),
      ),
      ...(batches === undefined ? {} : { batches }),
    };
  }
}
