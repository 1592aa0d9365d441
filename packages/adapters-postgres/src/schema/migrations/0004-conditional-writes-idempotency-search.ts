import { type Migration, sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/** `0004_conditional_writes_idempotency_search`, as recorded in `kysely_migration`. */
export const conditionalWritesIdempotencySearch: Migration = {
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
      .addColumn("user_id", "bigint", (column) => column.notNull().references("users.id").onDelete("cascade"))
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
};
