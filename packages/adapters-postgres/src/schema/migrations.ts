import { type Kysely, type Migration, sql } from "kysely";

// Migrations see the schema as it was when they were written, not as `Database` says it is now.
// biome-ignore lint/suspicious/noExplicitAny: Kysely's recommended type for migrations.
type AnyDatabase = Kysely<any>;

/**
 * (Re)defines the function the triggers on `posts` call: one outbox row per changed post. 0006
 * made it notify `post_events` at each change; 0007 made it stop (see there), and its `down` puts
 * the notification back. One text for all three, so that they cannot drift apart.
 */
async function recordPostEvents(db: AnyDatabase, { notifyEachChange }: { notifyEachChange: boolean }) {
  const notify = notifyEachChange ? sql.raw("PERFORM pg_notify('post_events', '');") : sql.raw("");
  await sql`
    CREATE OR REPLACE FUNCTION post_events_record() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        INSERT INTO post_events (type, post_id, author_id, occurred_at)
        VALUES ('post.deleted', OLD.id, OLD.user_id, clock_timestamp());
      ELSE
        INSERT INTO post_events
          (type, post_id, title, content, created_at, updated_at, author_id, author_email, occurred_at)
        VALUES (
          CASE TG_OP WHEN 'INSERT' THEN 'post.created' ELSE 'post.updated' END,
          NEW.id, NEW.title, NEW.content, NEW.created_at, NEW.updated_at, NEW.user_id,
          (SELECT email FROM users WHERE id = NEW.user_id), NEW.updated_at
        );
      END IF;
      ${notify}
      RETURN NULL;
    END
    $$`.execute(db);
}

/** Creates the row triggers of 0006 that call `post_events_record()`; 0009 replaced them, and its `down` puts them back. */
async function createRowTriggers(db: AnyDatabase) {
  await sql`
    CREATE TRIGGER posts_record_insert_delete AFTER INSERT OR DELETE ON posts
    FOR EACH ROW EXECUTE FUNCTION post_events_record()`.execute(db);
  // An update that changes nothing is no change.
  await sql`
    CREATE TRIGGER posts_record_update AFTER UPDATE ON posts
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION post_events_record()`.execute(db);
}

/**
 * Defines a function of 0009's statement triggers on `posts`: one insert of the events of every
 * post the statement created or updated (`type`), read `from` its transition tables as `n`, in
 * the order of the posts' ids.
 */
async function recordChangedPosts(db: AnyDatabase, name: string, type: string, from: string) {
  await sql`
    CREATE OR REPLACE FUNCTION ${sql.raw(name)}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO post_events
        (type, post_id, title, content, created_at, updated_at, author_id, author_email, occurred_at)
      SELECT ${sql.raw(`'${type}'`)}, n.id, n.title, n.content, n.created_at, n.updated_at, n.user_id,
             users.email, n.updated_at
      FROM ${sql.raw(from)} LEFT JOIN users ON users.id = n.user_id
      ORDER BY n.id;
      RETURN NULL;
    END
    $$`.execute(db);
}

/**
 * Every schema change, by name; Kysely runs them in name order and records each one in
 * `kysely_migration`. Defined in code rather than read from files, so that they run the same
 * from the sources and from `dist`. Never edit one that has been released: add the next.
 */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  "0001_create_users": {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable("users")
        .addColumn("id", "bigint", (column) => column.generatedAlwaysAsIdentity().primaryKey())
        .addColumn("email", "text", (column) => column.notNull())
        .addColumn("password_hash", "text", (column) => column.notNull())
        .addColumn("created_at", "timestamptz", (column) => column.notNull())
        .execute();
      // Unique whatever the case, even if a caller forgets to normalize. Also the index that
      // serves lookups by email and the ON CONFLICT of user creation.
      await db.schema
        .createIndex("users_email_lower_key")
        .on("users")
        .unique()
        .expression(sql`lower(email)`)
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable("users").execute();
    },
  },
  "0002_create_posts": {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable("posts")
        .addColumn("id", "bigint", (column) => column.generatedAlwaysAsIdentity().primaryKey())
        // varchar counts code points, as the contract's 255-character limit does.
        .addColumn("title", "varchar(255)", (column) => column.notNull())
        .addColumn("content", "text", (column) => column.notNull())
        .addColumn("created_at", "timestamptz", (column) => column.notNull())
        .addColumn("updated_at", "timestamptz", (column) => column.notNull())
        .addColumn("user_id", "bigint", (column) =>
          column.notNull().references("users.id").onDelete("cascade"),
        )
        .execute();
      // One author's posts newest first, for the filtered keyset page and for the cascade.
      // The primary key already serves the unfiltered page.
      await db.schema
        .createIndex("posts_user_id_id_idx")
        .on("posts")
        .columns(["user_id", "id desc"])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable("posts").execute();
    },
  },
  "0003_create_attempt_counts": {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable("attempt_counts")
        // Namespaced by the caller and short (an address, or a digest of an email).
        .addColumn("key", "text", (column) => column.primaryKey())
        .addColumn("count", "integer", (column) => column.notNull())
        .addColumn("reset_at", "timestamptz", (column) => column.notNull())
        .execute();
      // Serves the sweep of ended windows, which would otherwise read the whole table.
      await db.schema
        .createIndex("attempt_counts_reset_at_idx")
        .on("attempt_counts")
        .column("reset_at")
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable("attempt_counts").execute();
    },
  },
  "0004_conditional_writes_idempotency_search": {
    async up(db: AnyDatabase) {
      // Trusted since PostgreSQL 13: a database owner without superuser rights may create it.
      await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
      // Searches are substrings anywhere in the text (ILIKE '%…%'), which no B-tree serves; a
      // trigram index finds the candidate rows of a pattern of three or more characters.
      await sql`CREATE INDEX posts_title_trgm_idx ON posts USING gin (title gin_trgm_ops)`.execute(db);
      await sql`CREATE INDEX posts_content_trgm_idx ON posts USING gin (content gin_trgm_ops)`.execute(db);
      await db.schema
        .createTable("idempotency_keys")
        // The user's keys go with the user.
        .addColumn("user_id", "bigint", (column) =>
          column.notNull().references("users.id").onDelete("cascade"),
        )
        .addColumn("key", "varchar(255)", (column) => column.notNull())
        // No foreign key: a replay answers the post's id even after the post is deleted. Null, as
        // is the fingerprint, only inside the transaction that claims the key and makes the post.
        .addColumn("post_id", "bigint")
        // SHA-256 of the title's length and the title and content as UTF-8 (idempotent-creation.ts).
        .addColumn("fingerprint", "bytea")
        .addColumn("expires_at", "timestamptz", (column) => column.notNull())
        // Also the unique index a concurrent claim of the same key waits on.
        .addPrimaryKeyConstraint("idempotency_keys_pkey", ["user_id", "key"])
        .execute();
      // For the sweep of expired keys.
      await db.schema
        .createIndex("idempotency_keys_expires_at_idx")
        .on("idempotency_keys")
        .column("expires_at")
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable("idempotency_keys").execute();
      await db.schema.dropIndex("posts_content_trgm_idx").execute();
      await db.schema.dropIndex("posts_title_trgm_idx").execute();
    },
  },
  "0005_author_pages_from_the_index": {
    async up(db: AnyDatabase) {
      // With each post's version in the author index, an author's page read through the post
      // cache (ids and versions) is an index-only scan: one author's posts lie on as many heap
      // pages as there are posts, and reading them cost PostgreSQL a third of such a page's CPU.
      // updated_at changes only with title or content, whose trigram indexes
      // make every such update touch all indexes already.
      await sql`CREATE INDEX posts_user_id_id_version_idx ON posts (user_id, id DESC) INCLUDE (updated_at)`.execute(
        db,
      );
      await db.schema.dropIndex("posts_user_id_id_idx").execute();
      await sql`ALTER INDEX posts_user_id_id_version_idx RENAME TO posts_user_id_id_idx`.execute(db);
    },
    async down(db: AnyDatabase) {
      await sql`CREATE INDEX posts_user_id_id_plain_idx ON posts (user_id, id DESC)`.execute(db);
      await db.schema.dropIndex("posts_user_id_id_idx").execute();
      await sql`ALTER INDEX posts_user_id_id_plain_idx RENAME TO posts_user_id_id_idx`.execute(db);
    },
  },
  "0006_post_change_events": {
    async up(db: AnyDatabase) {
      // The outbox of change events. A row is written by the trigger below in the change's own
      // transaction, so a change and its event commit or roll back together. `seq` only orders the
      // rows for numbering; `number`, the public one, is given after commit by the sequencer
      // (PostgresChangeEventLog), because a number taken at insert time would become visible out
      // of order when transactions commit in another order than they began.
      await sql`
        CREATE TABLE post_events (
          seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          number bigint UNIQUE,
          numbered_at timestamptz,
          type text NOT NULL CHECK (type IN ('post.created', 'post.updated', 'post.deleted')),
          post_id bigint NOT NULL,
          title text,
          content text,
          created_at timestamptz,
          updated_at timestamptz,
          author_id bigint NOT NULL,
          author_email text,
          occurred_at timestamptz NOT NULL
        )`.execute(db);
      // What the sequencer reads: the rows still to number, in insertion order.
      await sql`CREATE INDEX post_events_unnumbered_idx ON post_events (seq) WHERE number IS NULL`.execute(
        db,
      );
      // What the retention sweep reads.
      await sql`CREATE INDEX post_events_numbered_at_idx ON post_events (numbered_at)`.execute(db);
      // The author's email is copied, as the event must carry it after the author is gone. A
      // deletion (also each post of a deleted user, through the cascade) carries the id only.
      // pg_notify is delivered at commit, once per transaction, and not at all on rollback.
      await recordPostEvents(db, { notifyEachChange: true });
      await createRowTriggers(db);
    },
    async down(db: AnyDatabase) {
      await sql`DROP TRIGGER posts_record_update ON posts`.execute(db);
      await sql`DROP TRIGGER posts_record_insert_delete ON posts`.execute(db);
      await sql`DROP FUNCTION post_events_record()`.execute(db);
      await db.schema.dropTable("post_events").execute();
    },
  },
  "0007_post_events_without_a_notification_per_change": {
    async up(db: AnyDatabase) {
      // The trigger no longer notifies: a notifying transaction holds a database-wide lock through
      // its commit, which put every write's commit in one line. The process that made a change
      // wakes the sequencer itself (PostgresChangeEventLog).
      await recordPostEvents(db, { notifyEachChange: false });
    },
    async down(db: AnyDatabase) {
      await recordPostEvents(db, { notifyEachChange: true });
    },
  },
  "0008_post_events_cheaper_to_write_and_to_number": {
    async up(db: AnyDatabase) {
      // What an event cost PostgreSQL was mostly index entries, and a sequencer that walked the
      // entries of every event numbered since the last vacuum, on each of its runs.
      //
      // 1. The sequencer looked for the rows still to number from the start of a partial index
      //    on `seq`, which keeps an entry for every row numbered since the table was last
      //    vacuumed: one run walked a million such entries after a million events (2–6 ms, up to
      //    twenty runs a second while writes go on). Each row now records the transaction that
      //    wrote it, and the index of the rows still to number is on that: the sequencer starts
      //    its scan at the oldest transaction that was still running at its previous run
      //    (PostgresChangeEventLog), before which every row was visible to that run and numbered
      //    by it. Existing rows keep a null: the numbered ones are never looked for again, and
      //    those still to number are given the migration's own transaction.
      // 2. `number` was UNIQUE as a constraint, whose index takes an entry for the NULL of every
      //    row still unnumbered; a partial unique index takes none, and still serves every reader
      //    (`number > $1`, `max(number)` and the sweep all imply `number IS NOT NULL`).
      // 3. `numbered_at` was indexed for the retention sweep only, which now walks the numbers
      //    from the oldest (PostgresChangeEventLog.deleteNumberedBefore), reading the rows it
      //    deletes and one more.
      // The primary key on `seq` stays: the sequencer's update finds its rows by it, and a table
      // without one cannot be in a logical replication publication that replicates updates.
      // Added without a default and then given one, so that the existing rows are not rewritten.
      await sql`ALTER TABLE post_events ADD COLUMN xid xid8`.execute(db);
      await sql`ALTER TABLE post_events ALTER COLUMN xid SET DEFAULT pg_current_xact_id()`.execute(db);
      await sql`UPDATE post_events SET xid = pg_current_xact_id() WHERE number IS NULL`.execute(db);
      await sql`CREATE INDEX post_events_pending_idx ON post_events (xid) WHERE number IS NULL`.execute(db);
      await sql`DROP INDEX post_events_unnumbered_idx`.execute(db);
      await sql`CREATE UNIQUE INDEX post_events_number_idx ON post_events (number) WHERE number IS NOT NULL`.execute(
        db,
      );
      await sql`ALTER TABLE post_events DROP CONSTRAINT post_events_number_key`.execute(db);
      await sql`DROP INDEX post_events_numbered_at_idx`.execute(db);
    },
    async down(db: AnyDatabase) {
      await sql`CREATE INDEX post_events_numbered_at_idx ON post_events (numbered_at)`.execute(db);
      await sql`ALTER TABLE post_events ADD CONSTRAINT post_events_number_key UNIQUE (number)`.execute(db);
      await sql`DROP INDEX post_events_number_idx`.execute(db);
      await sql`CREATE INDEX post_events_unnumbered_idx ON post_events (seq) WHERE number IS NULL`.execute(
        db,
      );
      await sql`ALTER TABLE post_events DROP COLUMN xid`.execute(db);
    },
  },
  "0009_post_events_written_per_statement": {
    async up(db: AnyDatabase) {
      // The outbox rows of a statement's changes are now written by one insert at its end, from
      // the statement's transition tables, instead of one trigger call and one insert a row:
      // the service writes the creations and the updates asked at once with one statement
      // (repositories/posts/turn-batches.ts), and a row trigger's call, its insert's executor
      // start-up and the author's lookup were paid once a post. The rows and their transaction are
      // the same, and so is their order but within a statement, now that of its posts' ids (the
      // order its creations took their ids): each statement's before the next statement's, and
      // every post of a deleted user's through the cascade (PostgreSQL gathers a cascade's rows
      // into the deleting statement's transition table and fires the trigger once). An update that
      // changes nothing is still no change; a row's id never changes, which is what pairs its old
      // and new versions.
      await sql`DROP TRIGGER posts_record_update ON posts`.execute(db);
      await sql`DROP TRIGGER posts_record_insert_delete ON posts`.execute(db);
      await sql`DROP FUNCTION post_events_record()`.execute(db);
      await recordChangedPosts(db, "post_events_record_created", "post.created", "created n");
      await recordChangedPosts(
        db,
        "post_events_record_updated",
        "post.updated",
        "updated n JOIN before_update o ON o.id = n.id AND o.* IS DISTINCT FROM n.*",
      );
      await sql`
        CREATE OR REPLACE FUNCTION post_events_record_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO post_events (type, post_id, author_id, occurred_at)
          SELECT 'post.deleted', o.id, o.user_id, clock_timestamp() FROM deleted o ORDER BY o.id;
          RETURN NULL;
        END
        $$`.execute(db);
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
      await sql`DROP TRIGGER posts_record_deleted ON posts`.execute(db);
      await sql`DROP TRIGGER posts_record_updated ON posts`.execute(db);
      await sql`DROP TRIGGER posts_record_created ON posts`.execute(db);
      await sql`DROP FUNCTION post_events_record_deleted()`.execute(db);
      await sql`DROP FUNCTION post_events_record_updated()`.execute(db);
      await sql`DROP FUNCTION post_events_record_created()`.execute(db);
      await recordPostEvents(db, { notifyEachChange: false });
      await createRowTriggers(db);
    },
  },
};
