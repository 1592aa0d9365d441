import { openTestDatabase } from "@posts/adapters-postgres/testing";
import {
  attemptCounterContract,
  postRepositoryContract,
  userRepositoryContract,
} from "@posts/domain/testing/vitest";

// One database per engine serves every suite, one after the other (the suites allow it).
for (const engine of ["postgres", "pglite"] as const) {
  let opened: ReturnType<typeof openTestDatabase> | undefined;
  const open = async () => {
    opened ??= openTestDatabase(engine);
    const db = await opened;
    return { posts: db.posts, users: db.users };
  };
  postRepositoryContract(`PostgresPostRepository on ${engine}`, open);
  userRepositoryContract(`PostgresUserRepository on ${engine}`, open);
  attemptCounterContract(`PostgresAttemptCounter on ${engine}`, async () => {
    opened ??= openTestDatabase(engine);
    const db = await opened;
    return { counter: db.attempts, close: () => db.close() };
  });
}
