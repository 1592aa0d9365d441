import { POSTS_PARTITION_SPAN } from "@posts/adapters-postgres";
import pg from "pg";

/** The password of every seeded user; the login scenario signs in with it. */
export const SEED_PASSWORD = "bench-password-1";

/** The email of seeded user `id` (1-based). */
export const seedEmail = (id: number) => `user${id}@bench.test`;

/**
 * The author of seeded post `id`: posts are dealt to users in turn, so user `u` wrote
 * posts u, u + users, u + 2·users, ... which lets the PATCH scenario pick a user's own posts
 * without asking the database.
 */
export const seedAuthor = (postId: number, users: number) => ((postId - 1) % users) + 1;

/** `url` with its database name replaced. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Drops and re-creates `database` on the server `serverUrl` points at. */
export async function recreateDatabase(serverUrl: string, database: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(database)) throw new Error(`unsafe database name: ${database}`);
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`drop database if exists ${database} with (force)`);
    await client.query(`create database ${database}`);
  } finally {
    await client.end();
  }
}

/** Anything that runs SQL: a pg client, or PGlite for the embedded run. */
export interface Sql {
  query(text: string, values?: unknown[]): Promise<unknown>;
}

/**
 * The search terms the seed plants, in controlled proportions, so that the search scenarios
 * measure each kind of plan on the full table: a term in every post (PostgreSQL should walk the
 * primary key backwards and stop after a page), a term in a few posts (the trigram indexes'
 * bitmap), a Korean term in some posts (multibyte trigrams), and two terms only the oldest posts
 * hold (a newest-first search must get past almost every post before its first match).
 */
export const SEARCH_TERMS = {
  /** In every post's content. */
  common: "ipsum",
  /** In the title of one post in {@link RARE_EVERY} (0.01 %): 100 of a million. */
  rare: "quokka",
  /** In the content of one post in {@link KOREAN_EVERY} (5 %). */
  korean: "게시판",
  /** In the title of the oldest 0.1 % of the posts only: a Korean term that only old pages hold. */
  oldKorean: "오래된",
  /** In the content of the oldest 1 % of the posts only: an ASCII term that only old pages hold. */
  oldAscii: "Archived",
} as const;

/** A term the seed plants in one stretch of ids: see {@link CLUSTERED_TERMS}. */
export interface ClusteredTerm {
  readonly term: string;
  readonly column: "title" | "content";
  /** Where its stretch starts and ends, as shares of the table's ids (0 the oldest, 1 the newest). */
  readonly from: number;
  readonly to: number;
  /** Its class in the search bench's report. */
  readonly kind: string;
}

/**
 * The terms whose matches lie in one stretch of ids, at 0.01 % to 20 % of the posts, in titles
 * or contents, ASCII or Korean: a newest-first search meets each only after every post above its
 * stretch, so the time to its first twenty matches tells whether the search finds the newest
 * matches below a cursor without reading the posts in between. Words the rest of the seed never
 * holds, so that each class's matches are exactly where it says; their letters make the
 * one-character classes too (`z` only in `waltz`, `j` only in `fjord`). The same stretches as the
 * design study's bench/search-order/seed.sql.
 */
export const CLUSTERED_TERMS: readonly ClusteredTerm[] = [
  { term: "sphinx", column: "title", from: 0, to: 0.2, kind: "clustered, 20 % in ids 0–20 % (titles)" },
  {
    term: "waltz",
    column: "content",
    from: 0.08,
    to: 0.19,
    kind: "clustered, 11 % in ids 8–19 % (contents)",
  },
  { term: "nymph", column: "content", from: 0.15, to: 0.16, kind: "clustered, 1 % at 15 % (contents)" },
  { term: "한가운데", column: "title", from: 0.5, to: 0.51, kind: "clustered, 1 % at 50 % (titles, Korean)" },
  { term: "glyph", column: "content", from: 0.15, to: 0.151, kind: "clustered, 0.1 % at 15 % (contents)" },
  { term: "fjord", column: "content", from: 0.15, to: 0.1501, kind: "clustered, 0.01 % at 15 % (contents)" },
];

/** The SQL that appends `' term'` to `column` of the posts of each clustered term's stretch (`g` the id). */
function clusteredText(column: ClusteredTerm["column"], posts: number): string {
  return CLUSTERED_TERMS.filter((each) => each.column === column)
    .map(
      ({ term, from, to }) =>
        ` || case when g > ${Math.round(posts * from)} and g <= ${Math.round(posts * to)} then ' ${term}' else '' end`,
    )
    .join("");
}

/** One seeded post in this many has the rare term. */
export const RARE_EVERY = 10_000;
/** One seeded post in this many has the Korean term. */
export const KOREAN_EVERY = 20;

/**
 * Fills the service's (already migrated, empty) schema with `users` users and `posts` posts
 * in a few set-based statements. Every user gets `passwordHash`, a hash of
 * {@link SEED_PASSWORD}. Ids are given explicitly (1..n) so the harness knows them, and the
 * identity sequences are moved past them so the service's own inserts follow on. The search
 * terms of {@link SEARCH_TERMS} are planted as their comments say. The posts' trigram indexes
 * (whatever the migrations named them) are dropped for the insert and built again after it, as
 * the migrations defined them: building a GIN index once is many times faster than keeping it up
 * to date row by row. The posts are seeded without change events (their triggers are off for the
 * insert): they stand for history from before the run. `builders` (connections to the same
 * database, `sql` among them) build the indexes of different partitions side by side, one each
 * at a time. Ends with VACUUM ANALYZE: statistics for
 * the planner, hint bits and the visibility map set, and no GIN pending list left for the first
 * measured round.
 */
export async function seed(
  sql: Sql,
  counts: { readonly users: number; readonly posts: number },
  passwordHash: string,
  builders: readonly Sql[] = [sql],
): Promise<void> {
  await sql.query("set synchronous_commit = off");
  // Every GIN index of posts (the trigram indexes, and on a partitioned schema those of characters,
  // of pairs of characters and of pairs of words).
  // On a partitioned table they are the parent's, whose definition says `ON ONLY`: built from it
  // as it is, the index would cover no partition.
  const ginIndexes = (await sql.query(
    "select indexname, indexdef from pg_indexes where tablename = 'posts' and indexdef like '% USING gin %'",
  )) as { rows: { indexname: string; indexdef: string }[] };
  for (const { indexname } of ginIndexes.rows) await sql.query(`drop index ${indexname}`);
  await sql.query(
    `insert into users (id, email, password_hash, created_at) overriding system value
     select g, 'user' || g || '@bench.test', $1, timestamptz '2025-01-01 00:00:00+00'
     from generate_series(1, ${counts.users}) g`,
    [passwordHash],
  );
  // The seeded posts are history from before the measured run, not changes made during it: with
  // the change-event triggers on, the seed left a million events for the service's sequencer to
  // number during the first scenarios, and a million dead entries in the outbox's indexes after.
  // (`disable trigger user` is a no-op on a schema without triggers, such as the fallback one.)
  // Partitioned by ranges of ids (migration 0011): the partitions for every seeded id, and the
  // two the service keeps ahead of the last one, made before the insert (the sequence is still
  // at 0 here: `ahead` counts from p0); a schema without the function has none.
  const partitioned = (await sql.query(
    "select to_regprocedure('posts_partitions_ahead(integer)') is not null as partitioned",
  )) as { rows: { partitioned: boolean }[] };
  if (partitioned.rows[0]?.partitioned) {
    await sql.query(`select posts_partitions_ahead(${Math.ceil(counts.posts / POSTS_PARTITION_SPAN) + 1})`);
  }
  await sql.query("alter table posts disable trigger user");
  // One post per second of 2025 onwards; content is a few hundred bytes, like a short post.
  await sql.query(
    `insert into posts (id, title, content, created_at, updated_at, user_id) overriding system value
     select g,
            'Post number ' || g || case when g % ${RARE_EVERY} = ${RARE_EVERY / 2} then ' ${SEARCH_TERMS.rare}' else '' end
              || case when g <= ${counts.posts} / 1000 then ' ${SEARCH_TERMS.oldKorean} 글' else '' end
              ${clusteredText("title", counts.posts)},
            case when g % ${KOREAN_EVERY} = ${KOREAN_EVERY / 2} then '오늘의 ${SEARCH_TERMS.korean} 소식. ' else '' end
              || repeat('Lorem ${SEARCH_TERMS.common} dolor sit amet, consectetur adipiscing. ', 6) || g
              || case when g <= ${counts.posts} / 100 then ' ${SEARCH_TERMS.oldAscii}.' else '' end
              ${clusteredText("content", counts.posts)},
            t, t, ((g - 1) % ${counts.users}) + 1
     from generate_series(1, ${counts.posts}) g,
          lateral (select timestamptz '2025-01-02 00:00:00+00' + g * interval '1 second' as t) ts`,
  );
  await sql.query("alter table posts enable trigger user");
  await sql.query(`select setval(pg_get_serial_sequence('users', 'id'), ${counts.users})`);
  await sql.query(`select setval(pg_get_serial_sequence('posts', 'id'), ${counts.posts})`);
  await buildIndexes(sql, builders, ginIndexes.rows);
  await sql.query("vacuum (analyze) users, posts");
}

/**
 * Builds `indexes` (definitions of indexes of posts, as pg_indexes gives them) on every partition,
 * each on one of `builders` while the others build others, then on posts itself, which attaches
 * the partitions' (an index of a partitioned table takes the partitions' matching ones rather than
 * building its own). Why by hand: PostgreSQL builds a partitioned index one partition after the
 * other in one statement, and a GIN build is single-threaded, so one statement keeps one core
 * busy however many the server has. A schema without partitions builds its indexes in place.
 */
async function buildIndexes(
  sql: Sql,
  builders: readonly Sql[],
  indexes: readonly { readonly indexdef: string }[],
): Promise<void> {
  const { rows } = (await sql.query(
    "select inhrelid::regclass::text as partition from pg_inherits where inhparent = 'posts'::regclass",
  )) as { rows: { partition: string }[] };
  const builds = rows.flatMap(({ partition }) =>
    indexes.map(
      ({ indexdef }) => `create index on ${partition} ${indexdef.slice(indexdef.indexOf(" USING "))}`,
    ),
  );
  await Promise.all(
    builders.map(async (builder) => {
      // A GIN build sorts its entries in this much memory (PostgreSQL's default is 64 MB).
      await builder.query("set maintenance_work_mem = '256MB'");
      for (let build = builds.shift(); build !== undefined; build = builds.shift())
        await builder.query(build);
      await builder.query("reset maintenance_work_mem");
    }),
  );
  for (const { indexdef } of indexes) await sql.query(indexdef.replace(" ON ONLY ", " ON "));
}

/**
 * The service's schema as issues #5 and #11 describe it (search indexes included), for a self-check before the service's
 * migrations exist. Once they do, the harness always runs those instead.
 */
export async function createFallbackSchema(sql: Sql): Promise<void> {
  await sql.query(`
    create table users (
      id bigint generated always as identity primary key,
      email text not null,
      password_hash text not null,
      created_at timestamptz not null
    );
    create unique index users_email_lower on users (lower(email));
    create table posts (
      id bigint generated always as identity primary key,
      title varchar(255) not null,
      content text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      user_id bigint not null references users on delete cascade
    );
    create index posts_user_id_id on posts (user_id, id desc);
    create extension if not exists pg_trgm;
    create index posts_title_trgm on posts using gin (title gin_trgm_ops);
    create index posts_content_trgm on posts using gin (content gin_trgm_ops);`);
}

/**
 * Reads the posts and users tables and all their indexes once, into the operating system's page
 * cache (`pg_prewarm` in `read` mode; PostgreSQL's own buffers are left as they are), and
 * answers how many bytes, or `undefined` when the server lacks the `pg_prewarm` extension.
 *
 * A server that has been running holds its tables in the page cache when the machine's memory
 * allows; a database seeded long before, or by an earlier run that other work has since pushed out
 * of the cache, is read from the disk instead. With ten million posts (7 GiB) the bench measured
 * that difference rather than the service: get-one's PostgreSQL CPU per request was 0.06–0.08 ms
 * cold and 0.025–0.03 ms warm (bench/RESULTS.md). Every server of the run then starts from the
 * same cache.
 */
export async function warmPageCache(sql: Sql): Promise<number | undefined> {
  try {
    await sql.query("create extension if not exists pg_prewarm");
  } catch {
    return undefined;
  }
  const { rows } = (await sql.query(
    `select coalesce(sum(pg_prewarm(c.oid, 'read')), 0)::int8 * current_setting('block_size')::int8 as bytes
       from pg_class c
       join (select 'posts'::regclass as relid union select relid from pg_partition_tree('posts')
             union select 'users'::regclass) t
         on c.oid = t.relid
            or c.oid in (select indexrelid from pg_index where indrelid = t.relid)
      -- A partitioned table or index has no blocks of its own: its partitions' are read.
      where c.relkind in ('r', 'i')`,
  )) as { rows: { bytes: string }[] };
  return Number(rows[0]?.bytes ?? 0);
}
