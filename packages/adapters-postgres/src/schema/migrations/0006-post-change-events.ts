import { type Migration, sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";
import { createRowTriggers, recordPostEvents } from "./post-events-record.js";

/** `0006_post_change_events`, as recorded in `kysely_migration`. */
export const postChangeEvents: Migration = {
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
    await sql`CREATE INDEX post_events_unnumbered_idx ON post_events (seq) WHERE number IS NULL`.execute(db);
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
};
