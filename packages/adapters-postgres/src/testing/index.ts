export { migrateTo } from "./migrate-to.js";
export { type OpenTestDatabaseOptions, openTestDatabase, type TestDatabase } from "./open-test-database.js";
export { truncateTables } from "./truncate-tables.js";
