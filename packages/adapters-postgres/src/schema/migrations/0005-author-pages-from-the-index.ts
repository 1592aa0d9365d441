import { type Migration, sql } from "kysely";
import type { AnyDatabase } from "./any-database.js";

/** `0005_author_pages_from_the_index`, as recorded in `kysely_migration`. */
export const authorPagesFromTheIndex: Migration = {
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
};
