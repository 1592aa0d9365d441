import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isDatabaseUnavailable } from "../../src/connection/is-database-unavailable.js";
import { PgliteInWorker } from "../../src/connection/pglite-in-worker.js";

describe("PGlite in a worker thread", () => {
  let database: PgliteInWorker;

  beforeAll(async () => {
    database = await PgliteInWorker.start();
    await database.query("CREATE TABLE t (id int8 PRIMARY KEY, at timestamptz)");
  }, 60_000);
  afterAll(() => database.close());

  it("answers rows parsed with the adapter's parsers, and the rows a write changed", async () => {
    const inserted = await database.query("INSERT INTO t VALUES ($1, $2), (2, now())", [1, new Date(0)]);
    expect(inserted.affectedRows).toBe(2);
    const { rows } = await database.query<{ id: number; at: Date }>(
      "SELECT id, at FROM t WHERE id = $1",
      [1],
    );
    expect(rows).toEqual([{ id: 1, at: new Date(0) }]);
  });

  it("rejects with PostgreSQL's fields, SQLSTATE included", async () => {
    await expect(database.query("INSERT INTO t VALUES (1, now())")).rejects.toMatchObject({
      code: "23505",
      constraint: "t_pkey",
      message: expect.stringContaining("duplicate key"),
    });
  });

  it("delivers a NOTIFY to its listener once committed, and no more after unlisten", async () => {
    const heard: string[] = [];
    const unlisten = await database.listen("news", (payload) => heard.push(payload));
    await database.query("BEGIN");
    await database.query("SELECT pg_notify('news', 'one')");
    await database.query("ROLLBACK");
    await database.query("SELECT pg_notify('news', 'two')");
    await expect.poll(() => heard).toEqual(["two"]);
    await unlisten();
    await database.query("SELECT pg_notify('news', 'three')");
    await database.query("SELECT 1");
    expect(heard).toEqual(["two"]);
  });

  it("fails the statement in flight and every later one as unavailable when the thread dies, and says so once", async () => {
    const failures: Error[] = [];
    const crashing = await PgliteInWorker.start({
      entry: new URL("./crashing-pglite-worker.js", import.meta.url),
      onFailure: (error) => failures.push(error),
    });
    const inFlight = await crashing.query("SELECT 1").catch((caught: unknown) => caught);
    expect(isDatabaseUnavailable(inFlight)).toBe(true);
    const later = await crashing.query("SELECT 1").catch((caught: unknown) => caught);
    expect(isDatabaseUnavailable(later)).toBe(true);
    expect(failures).toHaveLength(1);
    await crashing.close();
  });

  // Last: it closes the database the others use.
  it("fails every statement as unavailable once closed", async () => {
    await database.close();
    const error = await database.query("SELECT 1").catch((caught: unknown) => caught);
    expect(isDatabaseUnavailable(error)).toBe(true);
  });
});
