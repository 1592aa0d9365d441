import type { Kysely } from "kysely";

/**
 * The database as a migration sees it: the schema as it was when the migration was written, not
 * as `Database` says it is now.
 */
// biome-ignore lint/suspicious/noExplicitAny: Kysely's recommended type for migrations.
export type AnyDatabase = Kysely<any>;
