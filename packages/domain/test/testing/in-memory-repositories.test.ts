import { InMemoryDatabase } from "@posts/domain/testing";
import { postRepositoryContract, userRepositoryContract } from "@posts/domain/testing/vitest";

// The fake is held to the same contract as the PostgreSQL adapters, so it cannot drift.
const open = async () => new InMemoryDatabase();

postRepositoryContract("InMemoryDatabase posts", open);
userRepositoryContract("InMemoryDatabase users", open);
