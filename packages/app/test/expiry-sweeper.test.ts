import { ManualClock } from "@posts/domain/testing";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type ExpirySweep, type ExpirySweeper, startExpirySweeper } from "../src/expiry-sweeper.js";

const INTERVAL_MS = 60_000;

/** A sweep that records the instants it was asked about, and answers `deleted` (or throws it). */
function recordingSweep(name: string, deleted: number | Error = 0): ExpirySweep & { calls: Date[] } {
  const calls: Date[] = [];
  return {
    name,
    calls,
    deleteExpired: async (now) => {
      calls.push(now);
      if (deleted instanceof Error) throw deleted;
      return deleted;
    },
  };
}

describe("startExpirySweeper", () => {
  const clock = new ManualClock("2026-11-22T10:00:00.000Z");
  const logger = { debug: vi.fn(), error: vi.fn() };
  let sweeper: ExpirySweeper | undefined;
  const start = (sweeps: readonly ExpirySweep[]) => {
    sweeper = startExpirySweeper({ sweeps, clock, logger, intervalMs: INTERVAL_MS });
    return sweeper;
  };

  beforeEach(() => {
    vi.useFakeTimers();
    logger.debug.mockClear();
    logger.error.mockClear();
  });
  afterEach(async () => {
    await sweeper?.stop();
    sweeper = undefined;
    vi.useRealTimers();
  });

  it("runs every sweep of the list once per interval, with the clock's time, the first after one interval", async () => {
    const [first, second] = [recordingSweep("attempt counts", 3), recordingSweep("idempotency keys")];
    start([first, second]);

    await vi.advanceTimersByTimeAsync(INTERVAL_MS - 1);
    expect(first.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(first.calls).toEqual([clock.now()]);
    expect(second.calls).toEqual([clock.now()]);

    clock.advance(INTERVAL_MS);
    await vi.advanceTimersByTimeAsync(INTERVAL_MS);
    expect(first.calls).toHaveLength(2);
    expect(second.calls.at(-1)).toEqual(clock.now());
    expect(logger.debug).toHaveBeenCalledWith(
      { sweep: "attempt counts", deleted: 3 },
      "deleted 3 expired attempt counts",
    );
  });

  it("logs a failing sweep instead of throwing, runs the next one, and tries again at the next interval", async () => {
    const failure = new Error("connection terminated");
    const [failing, next] = [recordingSweep("attempt counts", failure), recordingSweep("idempotency keys")];
    start([failing, next]);

    await vi.advanceTimersByTimeAsync(INTERVAL_MS);
    expect(next.calls).toHaveLength(1);
    expect(logger.error).toHaveBeenCalledWith(
      { err: failure, sweep: "attempt counts" },
      "deleting expired attempt counts failed",
    );
    await vi.advanceTimersByTimeAsync(INTERVAL_MS);
    expect(failing.calls).toHaveLength(2);
    expect(next.calls).toHaveLength(2);
  });

  it("does not start a run while the previous one is still going", async () => {
    let finish = () => {};
    let calls = 0;
    start([
      {
        name: "slow rows",
        deleteExpired: () => {
          calls++;
          return new Promise((resolve) => {
            finish = () => resolve(0);
          });
        },
      },
    ]);
    await vi.advanceTimersByTimeAsync(3 * INTERVAL_MS);
    expect(calls).toBe(1);
    finish();
    await vi.advanceTimersByTimeAsync(INTERVAL_MS);
    expect(calls).toBe(2);
    finish();
  });

  it("stop ends the runs and waits for the one under way", async () => {
    let finish = () => {};
    let calls = 0;
    const stopping = start([
      {
        name: "slow rows",
        deleteExpired: () => {
          calls++;
          return new Promise((resolve) => {
            finish = () => resolve(0);
          });
        },
      },
    ]);
    await vi.advanceTimersByTimeAsync(INTERVAL_MS);
    let stopped = false;
    const stop = stopping.stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    finish();
    await stop;
    await vi.advanceTimersByTimeAsync(5 * INTERVAL_MS);
    expect(calls).toBe(1);
  });
});

describe("the expiry sweeper's timer", () => {
  it("does not keep the process alive", async () => {
    const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === "Timeout").length;
    const before = timers();
    const sweeper = startExpirySweeper({
      sweeps: [recordingSweep("rows")],
      clock: new ManualClock(),
      logger: { debug: () => {}, error: () => {} },
    });
    try {
      expect(timers()).toBe(before);
    } finally {
      await sweeper.stop();
    }
  });
});
