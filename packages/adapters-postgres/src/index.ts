export { createPgliteDatabase, type PgliteDatabaseOptions } from "./connection/create-pglite-database.js";
export {
  createPostgresDatabase,
  type PostgresDatabaseOptions,
} from "./connection/create-postgres-database.js";
export type { DatabaseEngine, DatabaseHandle, PrimaryStats } from "./connection/database-handle.js";
export type { RunStatement } from "./connection/direct-statements.js";
export { isDatabaseUnavailable } from "./connection/is-database-unavailable.js";
export type { PoolStats } from "./connection/pool-for-kysely.js";
export {
  createStandbyReads,
  FALLBACK_REASONS,
  type FallbackReason,
  isRecoveryConflict,
  type StandbyPool,
  type StandbyReadStats,
  type StandbyReads,
  type StandbyReadsOptions,
  type StandbyStats,
} from "./connection/standby-reads/standby-reads.js";
export { parseInt8, parseTimestamptz } from "./connection/type-parsers.js";
export {
  type DatabaseLease,
  type DatabaseLeaseArbiter,
  EVENT_RELAY_LOCK_KEY,
  embeddedPublisherLease,
  PostgresPublisherLease,
  type PostgresPublisherLeaseOptions,
} from "./events/publisher-lease.js";
export type { NotificationListener, Notifications } from "./notifications/notifications.js";
export { PartitionsAhead, type PartitionsAheadOptions } from "./partitions/partitions-ahead.js";
export { POSTS_PARTITION_SPAN, partitionOf } from "./partitions/post-partitions.js";
export { CurrentPosts, type CurrentPostsOptions, type ReadTicket } from "./post-cache/current-posts.js";
export {
  PostCache,
  type PostCacheOptions,
  type PostCacheStats,
  type PostCacheView,
} from "./post-cache/post-cache.js";
export { PostgresAttemptCounter } from "./repositories/postgres-attempt-counter.js";
export {
  NUMBERED_CHANNEL,
  PostgresChangeEventLog,
  type PostgresChangeEventLogOptions,
} from "./repositories/postgres-change-event-log.js";
export {
  PostgresPostRepository,
  type PostgresPostRepositoryOptions,
} from "./repositories/postgres-post-repository.js";
export {
  PostgresUserRepository,
  type PostgresUserRepositoryOptions,
} from "./repositories/postgres-user-repository.js";
export { DEFAULT_SEARCH_PAGE_MS } from "./repositories/posts/search-pages.js";
export type {
  AttemptCountsTable,
  Database,
  IdempotencyKeysTable,
  PostEventsTable,
  PostsTable,
  Timestamp,
  UsersTable,
} from "./schema/database.js";
export { MigrationError, type MigrationSummary, migrateToLatest } from "./schema/migrate-to-latest.js";
export {
  TrigramPendingListCleaner,
  type TrigramPendingListCleanerOptions,
} from "./trigram-pending-lists/trigram-pending-list-cleaner.js";
