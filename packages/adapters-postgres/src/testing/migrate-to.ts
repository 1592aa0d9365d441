import { type Kysely, Migrator } from "kysely";
import type { Database } from "../schema/database.js";
import { inMigrationTransaction } from "../schema/migration-lock.js";
import { MIGRATIONS } from "../schema/migrations.js";

/**
 * Brings the schema to exactly the migration `name`, up or down, so that a test can fill a
 * schema as an older release left it and then check that `migrateToLatest` keeps every row.
 * Throws what the migrator reports.
 */
export async function migrateTo(db: Kysely<Database>, name: string): Promise<void> {
  if (!(name in MIGRATIONS)) throw new Error(`no migration is named ${name}`);
  const { error } = await inMigrationTransaction(db, async (session) => {
    const migrator = new Migrator({
      db: session,
      provider: { getMigrations: async () => ({ ...MIGRATIONS }) },
      disableTransactions: true,
    });
    const outcome = await migrator.migrateTo(name);
    return { commit: outcome.error === undefined, value: outcome };
  });
  if (error !== undefined) throw error;
}
