import type { TestDatabase } from "@posts/adapters-postgres/testing";
import { sql } from "kysely";

class RolledBack extends Error {}

/** Waits until `count` statements of this test's database wait for a lock. */
export async function untilBlocked(database: TestDatabase, count: number): Promise<void> {
  for (let waited = 0; ; waited += 20) {
    const blocked = await sql<{ count: number }>`
      SELECT count(*)::int AS count FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(database.db);
    if ((blocked.rows[0]?.count ?? 0) >= count) return;
    if (waited > 5000) throw new Error(`fewer than ${count} statements ever waited for a lock`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Runs `write` while another transaction holds `lock` uncommitted, waits until `write` is
 * blocked on it, then commits that transaction (or rolls it back): a concurrent change landing
 * at the worst moment. Needs a PostgreSQL server (PGlite has a single connection).
 */
export async function whileLocked<T>(
  database: TestDatabase,
  lock: ReturnType<typeof sql> | readonly ReturnType<typeof sql>[],
  write: () => Promise<T>,
  then: "commit" | "rollback" = "commit",
): Promise<T> {
  let pending: Promise<T> | undefined;
  await database.db
    .transaction()
    .execute(async (trx) => {
      for (const statement of Array.isArray(lock) ? lock : [lock]) await statement.execute(trx);
      pending = write();
      pending.catch(() => {});
      await untilBlocked(database, 1);
      if (then === "rollback") throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
  if (pending === undefined) throw new Error("unreachable");
  return pending;
}
