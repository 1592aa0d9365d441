import { DEFAULT_SEARCH_BUDGET } from "@posts/domain";
import { InMemoryDatabase } from "@posts/domain/testing";
import { postRepositoryContract, userRepositoryContract } from "@posts/domain/testing/vitest";

// The fake is held to the same contract as the PostgreSQL adapters, so it cannot drift.
const open = async () => new InMemoryDatabase();

postRepositoryContract("InMemoryDatabase posts", async () => {
  const db = new InMemoryDatabase();
  return {
    posts: db.posts,
    users: db.users,
    budgetedPosts: db.postsWithSearchBudget(2),
    postsWithSearchBytes: (bytes: number) => db.postsWithSearchBudget(DEFAULT_SEARCH_BUDGET, bytes),
  };
});
userRepositoryContract("InMemoryDatabase users", open);
