import type { Migration } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/** `0003_create_attempt_counts`, as recorded in `kysely_migration`. */
export const createAttemptCounts: Migration = {
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
};
