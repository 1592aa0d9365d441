import { describe, expect, it, vi } from "vitest";
import { retryWithBackoff } from "../src/retry-with-backoff.js";

const transient = new Error("connection refused");
const permanent = new Error("password authentication failed");
const isRetryable = (error: unknown) => error === transient;

describe("retryWithBackoff", () => {
  it("answers the first success after transient failures, reporting each retry", async () => {
    const operation = vi
      .fn<() => Promise<string>>()
      .mockRejectedValueOnce(transient)
      .mockRejectedValueOnce(transient)
      .mockResolvedValue("up");
    const onRetry = vi.fn();

    const result = await retryWithBackoff(operation, {
      timeoutMs: 5000,
      isRetryable,
      onRetry,
      initialDelayMs: 1,
    });

    expect(result).toBe("up");
    expect(operation).toHaveBeenCalledTimes(3);
    expect(onRetry.mock.calls.map(([info]) => info.attempt)).toEqual([1, 2]);
  });

  it("throws a failure that is not retryable at once", async () => {
    const operation = vi.fn<() => Promise<string>>().mockRejectedValue(permanent);

    await expect(retryWithBackoff(operation, { timeoutMs: 5000, isRetryable })).rejects.toBe(permanent);
    expect(operation).toHaveBeenCalledTimes(1);
  });

  it("gives up with the last failure once the deadline has passed", async () => {
    let time = 0;
    const operation = vi.fn(async () => {
      time += 400;
      throw transient;
    });

    await expect(
      retryWithBackoff(operation, { timeoutMs: 1000, isRetryable, initialDelayMs: 1, now: () => time }),
    ).rejects.toBe(transient);
    expect(operation).toHaveBeenCalledTimes(3);
  });

  it("never waits past the deadline and doubles the wait up to the cap", async () => {
    const delays: number[] = [];
    let time = 0;
    await expect(
      retryWithBackoff(
        async () => {
          throw transient;
        },
        {
          timeoutMs: 30,
          isRetryable,
          initialDelayMs: 4,
          maxDelayMs: 8,
          now: () => time,
          onRetry: ({ delayMs }) => {
            delays.push(delayMs);
            time += 10;
          },
        },
      ),
    ).rejects.toBe(transient);

    expect(delays).toHaveLength(3);
    expect(delays[0]).toBeGreaterThanOrEqual(2);
    expect(delays[0]).toBeLessThanOrEqual(4);
    for (const delay of delays.slice(1)) {
      expect(delay).toBeGreaterThanOrEqual(4);
      expect(delay).toBeLessThanOrEqual(8);
    }
  });

  it("stops waiting when aborted", async () => {
    const controller = new AbortController();
    const attempt = retryWithBackoff(
      async () => {
        throw transient;
      },
      { timeoutMs: 60_000, isRetryable, initialDelayMs: 60_000, signal: controller.signal },
    );
    controller.abort(new Error("shutting down"));

    await expect(attempt).rejects.toThrow();
  });
});
