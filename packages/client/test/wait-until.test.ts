import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../src/wait-until.js";

describe("waitUntil", () => {
  it("answers the settled value, the otherwise value on timeout or abort, and leaves no listener and no armed waiter", async () => {
    const controller = new AbortController();
    const armed = new Set<string>();
    const arm = (name: string, settleWith?: string) => (settle: (value: string) => void) => {
      armed.add(name);
      if (settleWith !== undefined) setTimeout(() => settle(settleWith), 5);
      return () => {
        armed.delete(name);
      };
    };
    const options = { signal: controller.signal, otherwise: "ended" };

    expect(await waitUntil(arm("settled", "value"), { ...options, timeoutMs: 10_000 })).toBe("value");
    expect(await waitUntil(arm("timed out"), { ...options, timeoutMs: 5 })).toBe("ended");
    const aborted = waitUntil(arm("aborted"), options);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    controller.abort();
    expect(await aborted).toBe("ended");

    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    expect([...armed]).toEqual([]);
    // Already aborted: answers at once, without arming.
    expect(await waitUntil(arm("never"), options)).toBe("ended");
    expect([...armed]).toEqual([]);
  });

  it("disarms a wait settled while it was being armed", async () => {
    let disarmed = false;
    const value = await waitUntil(
      (settle) => {
        settle(1);
        return () => {
          disarmed = true;
        };
      },
      { otherwise: 0 },
    );
    expect({ value, disarmed }).toEqual({ value: 1, disarmed: true });
  });
});
