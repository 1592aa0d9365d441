export {
  type AttemptCounterFixture,
  attemptCounterContract,
  type OpenAttemptCounter,
} from "./attempt-counter-contract.js";
export { anEmail, aPost, aUser, principalOf } from "./builders.js";
export { FakePasswordHasher } from "./fake-password-hasher.js";
export { FakeTokenIssuer } from "./fake-token-issuer.js";
export { InMemoryAttemptCounter } from "./in-memory-attempt-counter.js";
export { InMemoryDatabase } from "./in-memory-database.js";
export type { InMemoryDependencies } from "./in-memory-dependencies.js";
export { inMemoryDependencies } from "./in-memory-dependencies.js";
export { ManualClock } from "./manual-clock.js";
export { postRepositoryContract } from "./post-repository-contract.js";
export type { OpenRepositories, RepositoryContractOptions, RepositoryFixture } from "./repository-fixture.js";
export { userRepositoryContract } from "./user-repository-contract.js";
