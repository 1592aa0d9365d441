import { type Migration, sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/** `0008_post_events_cheaper_to_write_and_to_number`, as recorded in `kysely_migration`. */
export const postEventsCheaperToWriteAndToNumber: Migration = {
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
    await sql`CREATE INDEX post_events_unnumbered_idx ON post_events (seq) WHERE number IS NULL`.execute(db);
    await sql`ALTER TABLE post_events DROP COLUMN xid`.execute(db);
  },
};
