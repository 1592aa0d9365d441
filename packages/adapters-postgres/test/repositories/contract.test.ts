import { CurrentPosts, PostgresPostRepository, PostgresUserRepository } from "@posts/adapters-postgres";
import { openTestDatabase } from "@posts/adapters-postgres/testing";
import {
  attemptCounterContract,
  postRepositoryContract,
  userRepositoryContract,
} from "@posts/domain/testing/vitest";
import { describeOnEachEngine } from "../use-test-database.js";

// One database per engine serves every suite, one after the other (the suites allow it).
describeOnEachEngine("the repository contracts on %s", (engine) => {
  let opened: ReturnType<typeof openTestDatabase> | undefined;
  const open = async () => {
    opened ??= openTestDatabase(engine);
    const db = await opened;
    // Search pages that read three posts each (the walk alone: the partitions would answer these
    // few posts in one page), so that the suite sees searches stop early; and
    // pages that read a few megabytes of text, so that it sees searches of big posts stop early.
    const budgetedPosts = new PostgresPostRepository(db.db, { searchBudget: 3, searchPartitions: false });
    const postsWithSearchBytes = (bytes: number) => new PostgresPostRepository(db.db, { searchBytes: bytes });
    return { posts: db.posts, users: db.users, budgetedPosts, postsWithSearchBytes };
  };
  postRepositoryContract(`PostgresPostRepository on ${engine}`, open);
  // With a post cache: pages read through it (ids and versions, then the posts not cached), in
  // a cache large enough for every post and in one that holds about ten small posts and evicts;
  // and deciding as recent pages say (which a suite this short leaves mostly reading in full).
  const cached = (name: string, cache: ConstructorParameters<typeof PostgresPostRepository>[1]) =>
    postRepositoryContract(`PostgresPostRepository with ${name} on ${engine}`, async () => {
      opened ??= openTestDatabase(engine);
      const { db, users } = await opened;
      return {
        posts: new PostgresPostRepository(db, cache),
        users,
        budgetedPosts: new PostgresPostRepository(db, { ...cache, searchBudget: 3, searchPartitions: false }),
        postsWithSearchBytes: (bytes: number) =>
          new PostgresPostRepository(db, { ...cache, searchBytes: bytes }),
      };
    });
  cached("a post cache read through", { cache: { maxBytes: 64 * 1024 * 1024, alwaysThroughCache: true } });
  cached("a tiny post cache read through", {
    cache: { maxBytes: 5000, maxPostBytes: 5000, alwaysThroughCache: true },
  });
  cached("an adaptive post cache", { cache: { maxBytes: 64 * 1024 * 1024 } });
  // The current posts answer lookups by id only on the embedded database, which no other process
  // writes: shared by the repositories that write posts, as the composition root shares them.
  if (engine === "pglite") {
    postRepositoryContract(`PostgresPostRepository with the current posts on ${engine}`, async () => {
      opened ??= openTestDatabase(engine);
      const { db } = await opened;
      const currentPosts = new CurrentPosts({ maxBytes: 64 * 1024 * 1024 });
      return {
        posts: new PostgresPostRepository(db, { currentPosts }),
        users: new PostgresUserRepository(db, { currentPosts }),
        budgetedPosts: new PostgresPostRepository(db, {
          currentPosts,
          searchBudget: 3,
          searchPartitions: false,
        }),
        postsWithSearchBytes: (bytes: number) =>
          new PostgresPostRepository(db, { currentPosts, searchBytes: bytes }),
      };
    });
  }
  userRepositoryContract(`PostgresUserRepository on ${engine}`, open);
  attemptCounterContract(`PostgresAttemptCounter on ${engine}`, async () => {
    opened ??= openTestDatabase(engine);
    const db = await opened;
    return { counter: db.attempts, close: () => db.close() };
  });
});
