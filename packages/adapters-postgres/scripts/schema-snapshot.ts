/**
 * `pnpm schema:snapshot` (at the repository's root): migrates a new database on the server of
 * DATABASE_URL, writes its schema to src/schema/schema.sql and drops the database.
 */
import { writeFile } from "node:fs/promises";
import { openTestDatabase, SCHEMA_SNAPSHOT_PATH, schemaSnapshot } from "../src/testing/index.js";

if (process.env.DATABASE_URL === undefined) {
  process.stderr.write(
    "schema:snapshot needs DATABASE_URL: a PostgreSQL server where it may create a database\n",
  );
  process.exit(2);
}
const database = await openTestDatabase("postgres");
try {
  if (database.connectionString === undefined) throw new Error("the test database is not on a server");
  await writeFile(SCHEMA_SNAPSHOT_PATH, await schemaSnapshot(database.connectionString));
  process.stdout.write(`wrote ${SCHEMA_SNAPSHOT_PATH}\n`);
} finally {
  await database.close();
}
