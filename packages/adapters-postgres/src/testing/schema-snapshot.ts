import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

/** Where the snapshot of the migrated schema is kept: `src/schema/schema.sql`. */
export const SCHEMA_SNAPSHOT_PATH = fileURLToPath(new URL("../schema/schema.sql", import.meta.url));

const HEADER =
  "-- The schema every migration of src/schema/migrations/ makes, for reading; the migrations are\n" +
  "-- what runs. Written by `pnpm schema:snapshot` at the repository's root; a test fails when it\n" +
  "-- and the migrations differ.\n";

/**
 * The schema of the migrated database at `connectionString` as `pg_dump --schema-only` prints it
 * (`PG_DUMP`, else `pg_dump` on the PATH, at least the server's major version), without what
 * changes from one dump to the next or from one server to another: comments, `SET` lines, the
 * session's `search_path`, `\restrict` keys, owners, grants, and Kysely's own bookkeeping tables.
 */
export async function schemaSnapshot(connectionString: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.env.PG_DUMP ?? "pg_dump",
    [
      "--schema-only",
      "--no-owner",
      "--no-privileges",
      "--no-comments",
      "--exclude-table=kysely_migration*",
      "--dbname",
      connectionString,
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  return `${HEADER}\n${normalizedDump(stdout)}`;
}

/** Drops the lines of a dump that say nothing of the schema, and runs of blank lines. */
function normalizedDump(dump: string): string {
  const kept = dump
    .split("\n")
    .filter(
      (line) =>
        !line.startsWith("--") &&
        !line.startsWith("SET ") &&
        !line.startsWith("SELECT pg_catalog.set_config(") &&
        !line.startsWith("\\restrict ") &&
        !line.startsWith("\\unrestrict "),
    )
    .map((line) => line.trimEnd());
  return `${kept
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim()}\n`;
}
