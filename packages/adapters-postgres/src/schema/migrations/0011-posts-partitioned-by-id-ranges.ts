import { type Migration, sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/** `0011_posts_partitioned_by_id_ranges`, as recorded in `kysely_migration`. */
export const postsPartitionedByIdRanges: Migration = {
  async up(db: AnyDatabase) {
    // The characters of a post, for the search of a term of one or two characters, which no
    // trigram serves: a GIN index of this array finds the posts that hold every character of the
    // term (`@>`), and the search's ILIKE then checks them. Each character of the title and of
    // the content's first 8192 characters, lower-cased in "C" (ASCII letters only, as the
    // search's `COLLATE "C" ILIKE` folds case), the index keeping each character once. Only a
    // prefix of the content is read: string_to_array costs about 110 ms a megabyte, paid on every
    // write of a long post. A content that may hold more than was read (more than 8192 bytes:
    // octet_length reads the stored length, without decompressing) adds the element '', and a
    // search for a character takes a post holding '' as a candidate too and checks it.
    await sql`
      CREATE FUNCTION post_chars(title text, content text) RETURNS text[]
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT string_to_array(lower(title COLLATE "C") || lower(left(content, 8192) COLLATE "C"), NULL)
               || CASE WHEN octet_length(content) > 8192 THEN ARRAY['']::text[] ELSE '{}'::text[] END
      $$`.execute(db);

    // The search asks the partitions newest first, one statement each, so that a statement reads
    // at most one range's candidates. Ranges of 131072 ids, named posts_p<k> for the ids from
    // k * 131072 + 1 to (k + 1) * 131072. No default or open-ended partition: one could not be
    // split later without rewriting it, so the partitions are made ahead of the ids instead
    // (posts_partitions_ahead, below, called by the service's PartitionsAhead task) and an insert
    // past the last one fails. The old table is set aside under another name, with the names of
    // its sequence, its primary key and its indexes freed for the new table.
    await sql`ALTER TABLE posts RENAME TO posts_unpartitioned`.execute(db);
    await sql`ALTER TABLE posts_unpartitioned RENAME CONSTRAINT posts_pkey TO posts_unpartitioned_pkey`.execute(
      db,
    );
    await sql`ALTER SEQUENCE posts_id_seq RENAME TO posts_unpartitioned_id_seq`.execute(db);
    await sql`DROP INDEX posts_user_id_id_idx`.execute(db);
    await sql`DROP INDEX posts_title_trgm_idx`.execute(db);
    await sql`DROP INDEX posts_content_trgm_idx`.execute(db);
    await sql`
      CREATE TABLE posts (
        id bigint GENERATED ALWAYS AS IDENTITY,
        title varchar(255) NOT NULL,
        content text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        user_id bigint NOT NULL,
        CONSTRAINT posts_pkey PRIMARY KEY (id)
      ) PARTITION BY RANGE (id)`.execute(db);
    // The ids go on where the old table's stopped.
    await sql`
      SELECT setval('posts_id_seq', last_value, is_called) FROM posts_unpartitioned_id_seq`.execute(db);

    // Makes the partitions that are missing for the next `ahead` * 131072 ids after the next one
    // (the sequence's next value), each an empty table first, attached then: ATTACH takes SHARE
    // UPDATE EXCLUSIVE on posts (reads and writes go on), where CREATE TABLE ... PARTITION OF
    // would take ACCESS EXCLUSIVE. Attaching also gives the partition the parent's indexes and
    // its foreign key, which locks users against writes (SHARE ROW EXCLUSIVE) for that moment. A
    // lock it cannot take within a second fails the call, and the next call tries again, rather
    // than queueing every request behind it (the caller's own lock_timeout is back once it returns). One call at a time (the advisory lock: "posts.pa" in
    // ASCII), so that two instances do not make the same partition. Answers how many it made.
    await sql`
      CREATE FUNCTION posts_partitions_ahead(ahead integer) RETURNS integer
      LANGUAGE plpgsql AS $$
      DECLARE
        span constant bigint := 131072;
        next_id bigint;
        existing text[];
        made integer := 0;
        caller_lock_timeout constant text := current_setting('lock_timeout');
      BEGIN
        PERFORM pg_advisory_xact_lock(8101821198648635489);
        PERFORM set_config('lock_timeout', '1s', true);
        SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END INTO next_id FROM posts_id_seq;
        SELECT coalesce(array_agg(c.relname::text), '{}') INTO existing
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'posts'::regclass;
        FOR k IN 0 .. (next_id - 1 + ahead * span) / span LOOP
          CONTINUE WHEN 'posts_p' || k = ANY (existing);
          EXECUTE format('CREATE TABLE %I (LIKE posts)', 'posts_p' || k);
          EXECUTE format('ALTER TABLE posts ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                         'posts_p' || k, k * span + 1, (k + 1) * span + 1);
          made := made + 1;
        END LOOP;
        PERFORM set_config('lock_timeout', caller_lock_timeout, true);
        RETURN made;
      END
      $$`.execute(db);
    // How many ids the sequence may still give before the last partition is full: what the
    // PartitionsAhead task reports and alarms on. A function of its own, called after
    // posts_partitions_ahead in the same statement, so that it reads the partitions that call
    // made (a volatile function's query sees the changes of its statement until then).
    await sql`
      CREATE FUNCTION posts_partition_ids_left() RETURNS bigint
      LANGUAGE sql AS $$
        SELECT coalesce((SELECT max(substr(c.relname, 8)::bigint) + 1
                           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                          WHERE i.inhparent = 'posts'::regclass AND c.relname ~ '^posts_p[0-9]+$'), 0) * 131072
               - (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM posts_id_seq)
      $$`.execute(db);

    // The partitions of the existing rows (also of any row given an id past the sequence's),
    // and two ahead.
    await sql`
      SELECT posts_partitions_ahead(2 + greatest(0,
        ((SELECT max(id) FROM posts_unpartitioned)
          - (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM posts_id_seq)
          + 131071) / 131072)::integer)`.execute(db);
    // The rows are copied before the change-event triggers exist: they are no change. The
    // indexes and the foreign key are made after the copy, each built once rather than row by row.
    await sql`
      INSERT INTO posts (id, title, content, created_at, updated_at, user_id) OVERRIDING SYSTEM VALUE
      SELECT id, title, content, created_at, updated_at, user_id FROM posts_unpartitioned`.execute(db);
    await sql`DROP TABLE posts_unpartitioned`.execute(db);
    await sql`
      ALTER TABLE posts ADD CONSTRAINT posts_user_id_fkey
      FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE`.execute(db);
    await sql`CREATE INDEX posts_user_id_id_idx ON posts (user_id, id DESC) INCLUDE (updated_at)`.execute(db);
    // In "C", as the search's ILIKE compares: the trigrams of a case-insensitive pattern in
    // another collation are not those this index holds.
    await sql`CREATE INDEX posts_title_trgm_idx ON posts USING gin ((title COLLATE "C") gin_trgm_ops)`.execute(
      db,
    );
    await sql`CREATE INDEX posts_content_trgm_idx ON posts USING gin ((content COLLATE "C") gin_trgm_ops)`.execute(
      db,
    );
    await sql`CREATE INDEX posts_chars_idx ON posts USING gin (post_chars(title, content))`.execute(db);
    await sql`
      CREATE TRIGGER posts_record_created AFTER INSERT ON posts REFERENCING NEW TABLE AS created
      FOR EACH STATEMENT EXECUTE FUNCTION post_events_record_created()`.execute(db);
    await sql`
      CREATE TRIGGER posts_record_updated AFTER UPDATE ON posts
      REFERENCING OLD TABLE AS before_update NEW TABLE AS updated
      FOR EACH STATEMENT EXECUTE FUNCTION post_events_record_updated()`.execute(db);
    await sql`
      CREATE TRIGGER posts_record_deleted AFTER DELETE ON posts REFERENCING OLD TABLE AS deleted
      FOR EACH STATEMENT EXECUTE FUNCTION post_events_record_deleted()`.execute(db);
  },
  async down(db: AnyDatabase) {
    // One plain table again, as 0010 left it, with the same rows and the sequence where it is.
    await sql`DROP TRIGGER posts_record_deleted ON posts`.execute(db);
    await sql`DROP TRIGGER posts_record_updated ON posts`.execute(db);
    await sql`DROP TRIGGER posts_record_created ON posts`.execute(db);
    await sql`DROP INDEX posts_chars_idx`.execute(db);
    await sql`DROP INDEX posts_content_trgm_idx`.execute(db);
    await sql`DROP INDEX posts_title_trgm_idx`.execute(db);
    await sql`DROP INDEX posts_user_id_id_idx`.execute(db);
    await sql`ALTER TABLE posts RENAME TO posts_partitioned`.execute(db);
    await sql`ALTER TABLE posts_partitioned RENAME CONSTRAINT posts_pkey TO posts_partitioned_pkey`.execute(
      db,
    );
    await sql`ALTER SEQUENCE posts_id_seq RENAME TO posts_partitioned_id_seq`.execute(db);
    await sql`
      CREATE TABLE posts (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        title varchar(255) NOT NULL,
        content text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        user_id bigint NOT NULL
      )`.execute(db);
    await sql`
      SELECT setval('posts_id_seq', last_value, is_called) FROM posts_partitioned_id_seq`.execute(db);
    await sql`
      INSERT INTO posts (id, title, content, created_at, updated_at, user_id) OVERRIDING SYSTEM VALUE
      SELECT id, title, content, created_at, updated_at, user_id FROM posts_partitioned`.execute(db);
    await sql`DROP TABLE posts_partitioned`.execute(db);
    await sql`DROP FUNCTION posts_partition_ids_left()`.execute(db);
    await sql`DROP FUNCTION posts_partitions_ahead(integer)`.execute(db);
    await sql`DROP FUNCTION post_chars(text, text)`.execute(db);
    await sql`
      ALTER TABLE posts ADD CONSTRAINT posts_user_id_fkey
      FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE`.execute(db);
    await sql`CREATE INDEX posts_user_id_id_idx ON posts (user_id, id DESC) INCLUDE (updated_at)`.execute(db);
    await sql`CREATE INDEX posts_title_trgm_idx ON posts USING gin (title gin_trgm_ops)`.execute(db);
    await sql`CREATE INDEX posts_content_trgm_idx ON posts USING gin (content gin_trgm_ops)`.execute(db);
    await sql`
      CREATE TRIGGER posts_record_created AFTER INSERT ON posts REFERENCING NEW TABLE AS created
      FOR EACH STATEMENT EXECUTE FUNCTION post_events_record_created()`.execute(db);
    await sql`
      CREATE TRIGGER posts_record_updated AFTER UPDATE ON posts
      REFERENCING OLD TABLE AS before_update NEW TABLE AS updated
      FOR EACH STATEMENT EXECUTE FUNCTION post_events_record_updated()`.execute(db);
    await sql`
      CREATE TRIGGER posts_record_deleted AFTER DELETE ON posts REFERENCING OLD TABLE AS deleted
      FOR EACH STATEMENT EXECUTE FUNCTION post_events_record_deleted()`.execute(db);
  },
};
