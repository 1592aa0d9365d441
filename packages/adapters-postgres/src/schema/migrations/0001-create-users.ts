import { type Migration, sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/** `0001_create_users`, as recorded in `kysely_migration`. */
export const createUsers: Migration = {
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
};
