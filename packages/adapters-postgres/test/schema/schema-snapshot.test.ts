import { readFile } from "node:fs/promises";
import { SCHEMA_SNAPSHOT_PATH, schemaSnapshot } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { expect, it } from "vitest";
import { postgres, serverUrl, useTestDatabase } from "../use-test-database.js";

describeNeeding(postgres, "src/schema/schema.sql", () => {
  const database = useTestDatabase("postgres");

  it("is the schema the migrations make (pnpm schema:snapshot writes it)", async () => {
    expect(await schemaSnapshot(serverUrl(database()))).toBe(await readFile(SCHEMA_SNAPSHOT_PATH, "utf8"));
  });
});
