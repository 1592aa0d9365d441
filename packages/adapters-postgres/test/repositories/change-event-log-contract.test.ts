import {
  PostgresChangeEventLog,
  PostgresPostRepository,
  PostgresUserRepository,
} from "@posts/adapters-postgres";
import { openTestDatabase } from "@posts/adapters-postgres/testing";
import { changeEventLogContract } from "@posts/domain/testing/vitest";
import { describeOnEachEngine } from "../use-test-database.js";

describeOnEachEngine("the change event log contract on %s", (engine) => {
  changeEventLogContract(`PostgresChangeEventLog on ${engine}`, async () => {
    const database = await openTestDatabase(engine);
    const events = new PostgresChangeEventLog(database.db, {
      ...(database.notifications === undefined ? {} : { notifications: database.notifications }),
    });
    await events.start();
    // As the service composes them: a change wakes the sequencer of the process that made it.
    const onChange = () => events.wake();
    return {
      posts: new PostgresPostRepository(database.db, { onChange }),
      users: new PostgresUserRepository(database.db, { onChange }),
      events,
      close: async () => {
        await events.close();
        await database.close();
      },
    };
  });
});
