import { describe, expect, it } from "vitest";
import { positionRunner } from "../../../src/connection/standby-reads/position-runner.js";

/** A pool runner that answers `rows` and records what it was asked. */
function pool(rows: unknown[] = [{ position: "0/200" }]) {
  const asked: string[] = [];
  return {
    asked,
    run: async (sql: string) => {
      asked.push(sql);
      return rows;
    },
  };
}

describe("the primary-position runner", () => {
  it("asks the session when it can take the statement, and the pool when it cannot", async () => {
    const fallback = pool();
    const onSession = positionRunner(async () => [{ position: "0/100" }], fallback.run);
    expect(await onSession("SELECT position", [])).toEqual([{ position: "0/100" }]);
    expect(fallback.asked).toEqual([]);
    const closed = positionRunner(() => undefined, fallback.run);
    expect(await closed("SELECT position", [])).toEqual([{ position: "0/200" }]);
    expect(fallback.asked).toEqual(["SELECT position"]);
  });

  it("asks the pool again when the session was lost", async () => {
    const fallback = pool();
    const lost = positionRunner(
      () => Promise.reject(new Error("Connection terminated unexpectedly")),
      fallback.run,
    );
    expect(await lost("SELECT position", [])).toEqual([{ position: "0/200" }]);
    expect(fallback.asked).toEqual(["SELECT position"]);
  });

  it("does not ask the pool again when the primary did not answer in time, so the reads wait once", async () => {
    const fallback = pool();
    const silent = positionRunner(() => Promise.reject(new Error("Query read timeout")), fallback.run);
    await expect(silent("SELECT position", [])).rejects.toThrow("Query read timeout");
    expect(fallback.asked).toEqual([]);
  });

  it("leaves a statement with parameters to the pool, since the session takes none", async () => {
    const fallback = pool();
    let sessionAsked = 0;
    const runner = positionRunner(async () => {
      sessionAsked += 1;
      return [];
    }, fallback.run);
    await runner("SELECT $1", [1]);
    expect({ sessionAsked, pool: fallback.asked }).toEqual({ sessionAsked: 0, pool: ["SELECT $1"] });
  });
});
