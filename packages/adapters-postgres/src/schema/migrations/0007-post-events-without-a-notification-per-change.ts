import type { Migration } from "kysely";
import type { AnyDatabase } from "./any-database.js";
import { recordPostEvents } from "./post-events-record.js";

/** `0007_post_events_without_a_notification_per_change`, as recorded in `kysely_migration`. */
export const postEventsWithoutANotificationPerChange: Migration = {
  async up(db: AnyDatabase) {
    // The trigger no longer notifies: a notifying transaction holds a database-wide lock through
    // its commit, which put every write's commit in one line. The process that made a change
    // wakes the sequencer itself (PostgresChangeEventLog).
    await recordPostEvents(db, { notifyEachChange: false });
  },
  async down(db: AnyDatabase) {
    await recordPostEvents(db, { notifyEachChange: true });
  },
};
