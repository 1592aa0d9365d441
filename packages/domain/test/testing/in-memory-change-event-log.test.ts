import { InMemoryDatabase } from "@posts/domain/testing";
import { changeEventLogContract } from "@posts/domain/testing/vitest";

// Held to the same contract as the database's log, so that tests written against it hold there.
changeEventLogContract("InMemoryDatabase events", async () => new InMemoryDatabase());
