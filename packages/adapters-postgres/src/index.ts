export { createPgliteDatabase, type PgliteDatabaseOptions } from "./create-pglite-database.js";
export { createPostgresDatabase, type PostgresDatabaseOptions } from "./create-postgres-database.js";
export type { Database, PostsTable, Timestamp, UsersTable } from "./database.js";
export type { DatabaseEngine, DatabaseHandle } from "./database-handle.js";
export { isDatabaseUnavailable } from "./is-database-unavailable.js";
export { MigrationError, type MigrationSummary, migrateToLatest } from "./migrate-to-latest.js";
export { PostgresPostRepository } from "./postgres-post-repository.js";
export { PostgresUserRepository } from "./postgres-user-repository.js";
export { parseInt8, parseTimestamptz } from "./type-parsers.js";
