import { openTestDatabase } from "@posts/adapters-postgres/testing";
import { postRepositoryContract, userRepositoryContract } from "@posts/domain/testing/vitest";

// One database per engine serves both suites, one after the other (the suites allow it).
for (const engine of ["postgres", "pglite"] as const) {
  let opened: ReturnType<typeof openTestDatabase> | undefined;
  const open = async () => {
    opened ??= openTestDatabase(engine);
    const db = await opened;
    return { posts: db.posts, users: db.users };
  };
  postRepositoryContract(`PostgresPostRepository on ${engine}`, open);
  userRepositoryContract(`PostgresUserRepository on ${engine}`, async () => {
    const fixture = await open();
    return { ...fixture, close: async () => (await opened)?.close() };
  });
}
