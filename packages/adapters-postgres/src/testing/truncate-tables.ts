import { type Kysely, sql } from "kysely";
import type { Database } from "../schema/database.js";

/**
 * Empties every table and restarts the id sequences, so that a test file can reuse one
 * migrated database between tests instead of paying for a new one.
 */
export async function truncateTables(db: Kysely<Database>): Promise<void> {
  await sql`TRUNCATE posts, users, attempt_counts, post_events RESTART IDENTITY CASCADE`.execute(db);
}
