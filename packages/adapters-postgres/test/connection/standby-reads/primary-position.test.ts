import { describe, expect, it } from "vitest";
import {
  PRIMARY_POSITION_SQL,
  PrimaryPosition,
} from "../../../src/connection/standby-reads/primary-position.js";
import { controlledRunner } from "./controlled-runner.js";

// The standby reads on real standbys are tested in scripts/topology (pnpm test:topology); these
// are the parts that need no server.

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("the primary's position", () => {
  it("is one statement, sent after the turn, for every read of that turn; the reads that arrive during it share the next", async () => {
    const { run, calls } = controlledRunner();
    const position = new PrimaryPosition(run, { gatherMs: 0, maxGatherMs: 0 });
    const first = position.afterNow();
    const second = position.afterNow();
    // Not sent yet: reads of the same turn of the event loop join it.
    expect(calls).toHaveLength(0);
    await tick();
    expect(calls.map((call) => call.sql)).toEqual([PRIMARY_POSITION_SQL]);
    // Sent before these reads arrived: it cannot serve them.
    const third = position.afterNow();
    const fourth = position.afterNow();
    calls[0]?.answer([{ position: "0/100" }]);
    expect([await first, await second]).toEqual([0x100n, 0x100n]);
    await tick();
    expect(calls).toHaveLength(2);
    // A read arriving before the second statement is answered waits for a third one.
    const fifth = position.afterNow();
    calls[1]?.answer([{ position: "0/200" }]);
    expect([await third, await fourth]).toEqual([0x200n, 0x200n]);
    await tick();
    expect(calls).toHaveLength(3);
    calls[2]?.answer([{ position: "0/300" }]);
    expect(await fifth).toBe(0x300n);
    expect(position.asked).toBe(3);
    expect(position.latest).toBe(0x300n);
  });

  it("sends the next statement no sooner than gatherMs after the last answer, so that it gathers the reads of that time", async () => {
    const { run, calls } = controlledRunner();
    const position = new PrimaryPosition(run, { gatherMs: 40 });
    // Two reads share the first statement: company, so the next one gathers.
    const first = Promise.all([position.afterNow(), position.afterNow()]);
    await tick();
    calls[0]?.answer([{ position: "0/100" }]);
    await first;
    const answeredAt = performance.now();
    const during = [position.afterNow(), position.afterNow()];
    await tick();
    expect(calls).toHaveLength(1);
    during.push(position.afterNow());
    // A loop, not vi.waitFor: the time to the second statement is measured, so every turn of the
    // event loop is looked at rather than every interval.
    while (calls.length < 2) await tick();
    expect(performance.now() - answeredAt).toBeGreaterThanOrEqual(35);
    calls[1]?.answer([{ position: "0/200" }]);
    expect(await Promise.all(during)).toEqual([0x200n, 0x200n, 0x200n]);
    expect(position.asked).toBe(2);
  });

  it("waits twice as long as its statements take to be answered, up to maxGatherMs, so that a busy primary answers fewer", async () => {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    /** How long after a slow first answer (60 ms) the second statement is sent. */
    const waitAfterSlowAnswer = async (maxGatherMs: number) => {
      const { run, calls } = controlledRunner();
      const position = new PrimaryPosition(run, { gatherMs: 0, maxGatherMs });
      const first = Promise.all([position.afterNow(), position.afterNow()]);
      await tick();
      await sleep(60);
      calls[0]?.answer([{ position: "0/100" }]);
      await first;
      const answeredAt = performance.now();
      const second = position.afterNow();
      // Looked at every turn of the event loop, as above: the wait is what is measured.
      while (calls.length < 2) await tick();
      const waited = performance.now() - answeredAt;
      calls[1]?.answer([{ position: "0/200" }]);
      expect(await second).toBe(0x200n);
      return waited;
    };
    // Twice the 60 ms the first statement took.
    expect(await waitAfterSlowAnswer(200)).toBeGreaterThanOrEqual(115);
    expect(await waitAfterSlowAnswer(5)).toBeLessThan(40);
  });

  it("waits only for the end of the turn after a statement that served a single read: a lone client waits for nobody", async () => {
    const { run, calls } = controlledRunner();
    // A gathering time no busy machine is mistaken for: a read that waited for it waited a second.
    const position = new PrimaryPosition(run, { gatherMs: 1000, maxGatherMs: 1000 });
    for (let read = 1; read <= 3; read++) {
      const alone = position.afterNow();
      const askedAt = performance.now();
      while (calls.length < read) await tick();
      expect(performance.now() - askedAt).toBeLessThan(500);
      calls[read - 1]?.answer([{ position: `0/${read}00` }]);
      expect(await alone).toBe(BigInt(read * 0x100));
    }
    expect(position.asked).toBe(3);
  });

  it("fails the reads waiting for it when the primary does not answer, and asks again for the next read", async () => {
    const { run, calls } = controlledRunner();
    const position = new PrimaryPosition(run, { gatherMs: 0, maxGatherMs: 0 });
    const failed = position.afterNow();
    await tick();
    calls[0]?.fail(new Error("connect ECONNREFUSED"));
    await expect(failed).rejects.toThrow("ECONNREFUSED");
    const next = position.afterNow();
    await tick();
    calls[1]?.answer([{ position: "0/300" }]);
    expect(await next).toBe(0x300n);
  });
});
