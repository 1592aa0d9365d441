export {
  baseBackupArguments,
  initdbArguments,
  LocalCluster,
  type LocalServer,
  postgresBinariesForTests,
} from "./local-cluster.js";
export { migrateTo } from "./migrate-to.js";
export { type OpenTestDatabaseOptions, openTestDatabase, type TestDatabase } from "./open-test-database.js";
export {
  acquirePostgresContainer,
  DEFAULT_POSTGRES_IMAGE,
  type PostgresContainerLease,
  postgresContainerImage,
} from "./postgres-container.js";
export { containerRuntimeAnswers, postgresForTests } from "./postgres-for-tests.js";
export { SCHEMA_SNAPSHOT_PATH, schemaSnapshot } from "./schema-snapshot.js";
export { truncateTables } from "./truncate-tables.js";
