import { InMemoryAttemptCounter } from "@posts/domain/testing";
import { attemptCounterContract } from "@posts/domain/testing/vitest";

// The fake is held to the same contract as the PostgreSQL adapter, so it cannot drift.
attemptCounterContract("InMemoryAttemptCounter", async () => ({ counter: new InMemoryAttemptCounter() }));
