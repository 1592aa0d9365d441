// The kit needs no test framework: the contract suites, which need vitest, are `./testing/vitest`.
export { anEmail, aPost, aUser, principalOf } from "./builders.js";
export { FakePasswordHasher } from "./fake-password-hasher.js";
export { FakeTokenIssuer } from "./fake-token-issuer.js";
export { InMemoryAttemptCounter } from "./in-memory-attempt-counter.js";
export { InMemoryChangeEventLog, type RecordedChange } from "./in-memory-change-event-log.js";
export { InMemoryDatabase } from "./in-memory-database.js";
export type { InMemoryDependencies } from "./in-memory-dependencies.js";
export { inMemoryDependencies } from "./in-memory-dependencies.js";
export { ManualClock } from "./manual-clock.js";
