import { attemptCounterContract, InMemoryAttemptCounter } from "@posts/domain/testing";

// The fake is held to the same contract as the PostgreSQL adapter, so it cannot drift.
attemptCounterContract("InMemoryAttemptCounter", async () => ({ counter: new InMemoryAttemptCounter() }));
