import { type Migration, sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/** `0010_post_events_record_their_transactions_start`, as recorded in `kysely_migration`. */
export const postEventsRecordTheirTransactionsStart: Migration = {
  async up(db: AnyDatabase) {
    // Each row records when the transaction that wrote it started (`now()`, in microseconds),
    // beside that transaction's id (`xid`). A write whose connection was lost before its
    // commit was confirmed is looked for by the two together on the primary it reaches next
    // (poolForKysely): the id alone may be one a promoted standby gave again to another
    // transaction, after the old primary's write never reached it; that other transaction
    // cannot also have started at the same microsecond, before the promotion. No index: the
    // search walks the primary key from the sequence's last value the write saw.
    // Added without a default and then given one, so that the existing rows are not rewritten
    // and keep a null (their transactions' start is not known).
    await sql`ALTER TABLE post_events ADD COLUMN xact_start timestamptz`.execute(db);
    await sql`ALTER TABLE post_events ALTER COLUMN xact_start SET DEFAULT now()`.execute(db);
  },
  async down(db: AnyDatabase) {
    await sql`ALTER TABLE post_events DROP COLUMN xact_start`.execute(db);
  },
};
