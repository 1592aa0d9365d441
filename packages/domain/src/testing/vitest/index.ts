// The repository contract suites, apart from the kit because they import vitest.
export {
  type AttemptCounterFixture,
  attemptCounterContract,
  type OpenAttemptCounter,
} from "./attempt-counter-contract.js";
export {
  type ChangeEventLogFixture,
  changeEventLogContract,
  type OpenChangeEventLog,
} from "./change-event-log-contract.js";
export { describeNeeding, type Prerequisite } from "./describe-needing.js";
export { postRepositoryContract } from "./post-repository-contract.js";
export type {
  OpenRepositories,
  RepositoryContractOptions,
  RepositoryFixture,
} from "./repository-fixture.js";
export { userRepositoryContract } from "./user-repository-contract.js";
