import type { Migration } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/** `0002_create_posts`, as recorded in `kysely_migration`. */
export const createPosts: Migration = {
  async up(db: AnyDatabase) {
    await db.schema
      .createTable("posts")
      .addColumn("id", "bigint", (column) => column.generatedAlwaysAsIdentity().primaryKey())
      // varchar counts code points, as the contract's 255-character limit does.
      .addColumn("title", "varchar(255)", (column) => column.notNull())
      .addColumn("content", "text", (column) => column.notNull())
      .addColumn("created_at", "timestamptz", (column) => column.notNull())
      .addColumn("updated_at", "timestamptz", (column) => column.notNull())
      .addColumn("user_id", "bigint", (column) => column.notNull().references("users.id").onDelete("cascade"))
      .execute();
    // One author's posts newest first, for the filtered keyset page and for the cascade.
    // The primary key already serves the unfiltered page.
    await db.schema.createIndex("posts_user_id_id_idx").on("posts").columns(["user_id", "id desc"]).execute();
  },
  async down(db: AnyDatabase) {
    await db.schema.dropTable("posts").execute();
  },
};
