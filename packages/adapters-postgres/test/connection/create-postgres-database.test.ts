import { createPostgresDatabase } from "@posts/adapters-postgres";
import { describe, expect, it } from "vitest";

describe("without standbys", () => {
  it("a database handle has no standby reads, and every statement goes to DATABASE_URL", async () => {
    const handle = createPostgresDatabase({ connectionString: "postgres://nobody@127.0.0.1:1/none" });
    expect(handle.readStatements).toBeUndefined();
    expect(handle.standbyStats).toBeUndefined();
    await handle.close();
  });
});
