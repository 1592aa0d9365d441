export { migrateTo } from "./migrate-to.js";
export { type OpenTestDatabaseOptions, openTestDatabase, type TestDatabase } from "./open-test-database.js";
export { containerRuntimeAnswers, postgresForTests } from "./postgres-for-tests.js";
export { truncateTables } from "./truncate-tables.js";
