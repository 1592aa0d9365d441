import { describe, expect, it } from "vitest";
import { ByteBudget } from "../../src/http/byte-budget.js";

/** Whether `promise` has settled after every callback queued so far has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe("ByteBudget", () => {
  it("gives bytes at once while they fit, and holds a taker back until enough are given back", async () => {
    const budget = new ByteBudget(100);
    const a = await budget.take(60, {});
    const b = await budget.take(40, {});
    expect(budget.stats()).toEqual({ heldBytes: 100, waiting: 0 });
    const c = budget.take(50, {});
    expect(await settled(c)).toBe(false);
    expect(budget.stats()).toEqual({ heldBytes: 100, waiting: 1 });
    b?.();
    expect(await settled(c)).toBe(false);
    a?.();
    a?.(); // a second call gives nothing back twice
    expect(await settled(c)).toBe(true);
    expect(budget.stats()).toEqual({ heldBytes: 50, waiting: 0 });
  });

  it("serves in the order asked: a small taker never passes a large one that waits", async () => {
    const budget = new ByteBudget(100);
    const first = await budget.take(90, {});
    const large = budget.take(80, {});
    const small = budget.take(5, {});
    expect(await settled(small)).toBe(false);
    first?.();
    expect(await settled(large)).toBe(true);
    expect(await settled(small)).toBe(true);
    expect(budget.stats()).toEqual({ heldBytes: 85, waiting: 0 });
  });

  it("lets a taker of more than the whole budget in alone, once nothing is held", async () => {
    const budget = new ByteBudget(100);
    const small = await budget.take(10, {});
    const huge = budget.take(500, {});
    expect(await settled(huge)).toBe(false);
    small?.();
    const release = await huge;
    expect(budget.stats()).toEqual({ heldBytes: 500, waiting: 0 });
    const next = budget.take(1, {});
    expect(await settled(next)).toBe(false);
    release?.();
    expect(await settled(next)).toBe(true);
  });

  it("answers undefined, having taken nothing, when the wait times out or is aborted, and lets the next in", async () => {
    const budget = new ByteBudget(100);
    const held = await budget.take(60, {});
    expect(await budget.take(50, { timeoutMs: 5 })).toBeUndefined();
    const controller = new AbortController();
    const aborted = budget.take(70, { signal: controller.signal });
    const behind = budget.take(40, {});
    expect(await settled(behind)).toBe(false);
    controller.abort();
    expect(await aborted).toBeUndefined();
    // Only the aborted taker in front held it back: it fits beside what is held.
    expect(await settled(behind)).toBe(true);
    expect(budget.stats()).toEqual({ heldBytes: 100, waiting: 0 });
    held?.();
  });
});
