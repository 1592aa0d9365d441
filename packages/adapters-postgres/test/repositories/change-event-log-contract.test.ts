import { PostgresChangeEventLog } from "@posts/adapters-postgres";
import { openTestDatabase } from "@posts/adapters-postgres/testing";
import { changeEventLogContract } from "@posts/domain/testing/vitest";

for (const engine of ["postgres", "pglite"] as const) {
  changeEventLogContract(`PostgresChangeEventLog on ${engine}`, async () => {
    const database = await openTestDatabase(engine);
    const events = new PostgresChangeEventLog(database.db, {
      ...(database.notifications === undefined ? {} : { notifications: database.notifications }),
    });
    await events.start();
    return {
      posts: database.posts,
      users: database.users,
      events,
      close: async () => {
        await events.close();
        await database.close();
      },
    };
  });
}
