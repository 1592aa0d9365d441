import { type Migration, sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";
import { createRowTriggers, recordPostEvents } from "./post-events-record.js";

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

/** `0009_post_events_written_per_statement`, as recorded in `kysely_migration`. */
export const postEventsWrittenPerStatement: Migration = {
  async up(db: AnyDatabase) {
    // The outbox rows of a statement's changes are now written by one insert at its end, from
    // the statement's transition tables, instead of one trigger call and one insert a row:
    // the service writes the creations and the updates asked at once with one statement
    // (repositories/posts/writes-together.ts), and a row trigger's call, its insert's executor
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
};
