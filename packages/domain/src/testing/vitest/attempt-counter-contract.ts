import { describe, expect, it } from "vitest";
import type { AttemptCounter } from "../../ports/attempt-counter.js";
import type { RepositoryContractOptions } from "./repository-fixture.js";
import { useRepositoryFixture } from "./use-repository-fixture.js";

/** The counter a contract suite exercises, and how to let its store go. */
export interface AttemptCounterFixture {
  readonly counter: AttemptCounter;
  /** Called once, after the suite's last test; leave it out when the store outlives the suite. */
  close?(): Promise<void>;
}

/**
 * Opens the store {@link attemptCounterContract} runs against, once per suite. The store need
 * not be empty and is never reset: every test counts keys of its own. What the tests do assume
 * is that no count in it has a window ending before 2000-01-01 other than their own, because
 * `deleteExpired` is checked by how many it forgets at instants of 1990.
 */
export type OpenAttemptCounter = () => Promise<AttemptCounterFixture>;

const T0 = new Date("2026-11-22T10:15:30.123Z");
const at = (offsetMs: number, from = T0) => new Date(from.getTime() + offsetMs);
const MINUTE = 60_000;

// Two test processes may share one database.
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
let sequence = 0;
/** A key no other test counts. */
const aKey = (label = "key") => `contract:${label}:${run}:${++sequence}`;

/**
 * Registers the behavioural tests every `AttemptCounter` must pass, under `describe(name)`: the
 * port's JSDoc turned into checks. Run it once per implementation:
 *
 * ```ts
 * attemptCounterContract("PostgresAttemptCounter on PGlite", async () => {
 *   const db = await openTestDatabase("pglite");
 *   return { counter: new PostgresAttemptCounter(db.db), close: () => db.close() };
 * });
 * ```
 *
 * Checks: a first increment starts a window of `windowMs` at `now`; increments in a window count
 * up and keep its end, to the millisecond; the window ends at `resetAt` exactly and the next
 * increment starts a new one; concurrent increments of one key each answer a different count;
 * `read` answers the running counts of several keys at once, leaves out keys without a running
 * window, and changes nothing; keys are independent and compared exactly; `deleteExpired` forgets
 * only ended windows and says how many.
 */
export function attemptCounterContract(
  name: string,
  open: OpenAttemptCounter,
  options: RepositoryContractOptions = {},
): void {
  // Every contract suite opens alike: an entry point of its own (public, with its own JSDoc), and
  // the store opened once for the suite by useRepositoryFixture, which is what they share.
  describe(name, () => {
    const fixture = useRepositoryFixture(open, options);
    const spec = (title: string, body: () => Promise<void>) => it(title, body, options.testTimeoutMs);
    const counter = () => fixture().counter;
    const countsOf = async (keys: readonly string[], now: Date) =>
      Object.fromEntries(await counter().read(keys, now));

    spec("a first increment counts 1 in a window of windowMs from now", async () => {
      expect(await counter().increment(aKey(), MINUTE, T0)).toStrictEqual({ count: 1, resetAt: at(MINUTE) });
    });

    spec("increments within the window count up and keep the window's end, to the millisecond", async () => {
      const key = aKey();
      await counter().increment(key, MINUTE, T0);
      expect(await counter().increment(key, MINUTE, at(1))).toStrictEqual({ count: 2, resetAt: at(MINUTE) });
      // A later increment's own windowMs does not move the end of a running window.
      expect(await counter().increment(key, 5 * MINUTE, at(MINUTE - 1))).toStrictEqual({
        count: 3,
        resetAt: at(MINUTE),
      });
    });

    spec("the window ends at resetAt exactly: the next increment starts a new one from 1", async () => {
      const key = aKey();
      await counter().increment(key, 1000, T0);
      await counter().increment(key, 1000, at(999));
      expect(await counter().increment(key, 1000, at(1000))).toStrictEqual({ count: 1, resetAt: at(2000) });
      // Long after the end, a window starts at the increment, not at the old end.
      expect(await counter().increment(key, 1000, at(10_500))).toStrictEqual({
        count: 1,
        resetAt: at(11_500),
      });
    });

    spec("50 concurrent increments of one key answer the counts 1 to 50, each exactly once", async () => {
      const key = aKey("concurrent");
      const counts = await Promise.all(
        Array.from({ length: 50 }, () => counter().increment(key, MINUTE, T0)),
      );
      expect(counts.map((count) => count.count).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 50 }, (_, i) => i + 1),
      );
      expect(new Set(counts.map((count) => count.resetAt.getTime()))).toEqual(
        new Set([at(MINUTE).getTime()]),
      );
      expect(await countsOf([key], T0)).toStrictEqual({ [key]: { count: 50, resetAt: at(MINUTE) } });
    });

    spec("concurrent increments of one key as its window ends start exactly one new window", async () => {
      const key = aKey("concurrent-reset");
      await counter().increment(key, 1000, T0);
      const counts = await Promise.all(
        Array.from({ length: 20 }, () => counter().increment(key, 1000, at(1000))),
      );
      expect(counts.map((count) => count.count).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      expect(await countsOf([key], at(1000))).toStrictEqual({ [key]: { count: 20, resetAt: at(2000) } });
    });

    spec("read answers the running counts of several keys in one call", async () => {
      const [a, b] = [aKey("a"), aKey("b")];
      await counter().increment(a, MINUTE, T0);
      await counter().increment(b, 2 * MINUTE, at(10));
      await counter().increment(b, MINUTE, at(20));
      expect(await countsOf([a, b], at(30))).toStrictEqual({
        [a]: { count: 1, resetAt: at(MINUTE) },
        [b]: { count: 2, resetAt: at(2 * MINUTE + 10) },
      });
    });

    spec(
      "read leaves out keys never counted and keys whose window has ended, and answers nothing for no keys",
      async () => {
        const [running, ended, never] = [aKey("running"), aKey("ended"), aKey("never")];
        await counter().increment(running, MINUTE, T0);
        await counter().increment(ended, 1000, T0);
        expect(await countsOf([running, ended, never], at(1000))).toStrictEqual({
          [running]: { count: 1, resetAt: at(MINUTE) },
        });
        expect(await countsOf([], T0)).toStrictEqual({});
      },
    );

    spec("read changes nothing: no count, no window, no reset", async () => {
      const [counted, never] = [aKey("counted"), aKey("never")];
      await counter().increment(counted, 1000, T0);
      for (let i = 0; i < 3; i++) await counter().read([counted, never], at(500));
      // Reading an ended window does not start a new one either.
      await counter().read([counted], at(5000));
      expect(await countsOf([counted, never], at(999))).toStrictEqual({
        [counted]: { count: 1, resetAt: at(1000) },
      });
      expect(await counter().increment(counted, 1000, at(999))).toStrictEqual({
        count: 2,
        resetAt: at(1000),
      });
      expect(await counter().increment(never, 1000, at(999))).toStrictEqual({ count: 1, resetAt: at(1999) });
    });

    spec("keys are independent, and compared exactly (case, spaces and non-ASCII text matter)", async () => {
      const base = aKey("Mixed Case 가");
      const keys = [base, base.toLowerCase(), ` ${base}`, `${base}:suffix`];
      for (let i = 0; i < 3; i++) await counter().increment(base, MINUTE, T0);
      await counter().increment(base.toLowerCase(), MINUTE, T0);
      expect(await countsOf(keys, T0)).toStrictEqual({
        [base]: { count: 3, resetAt: at(MINUTE) },
        [base.toLowerCase()]: { count: 1, resetAt: at(MINUTE) },
      });
    });

    spec("deleteExpired forgets only the windows that have ended, and says how many", async () => {
      // Instants of 1990, when no other test's window has ended (see OpenAttemptCounter).
      const then = new Date("1990-01-01T00:00:00.000Z");
      const [endedEarly, endsNow, runs] = [aKey("ended-early"), aKey("ends-now"), aKey("runs")];
      await counter().increment(endedEarly, 1000, then);
      await counter().increment(endsNow, 2000, then);
      await counter().increment(runs, 2001, then);

      expect(await counter().deleteExpired(at(999, then))).toBe(0);
      expect(await counter().deleteExpired(at(2000, then))).toBe(2);
      expect(await counter().deleteExpired(at(2000, then))).toBe(0);
      // Read at an instant when all three were running: only the one not expired is still stored.
      expect(await countsOf([endedEarly, endsNow, runs], then)).toStrictEqual({
        [runs]: { count: 1, resetAt: at(2001, then) },
      });
      // A forgotten key starts afresh.
      expect(await counter().increment(endedEarly, 1000, at(500, then))).toStrictEqual({
        count: 1,
        resetAt: at(1500, then),
      });
      expect(await counter().deleteExpired(at(3000, then))).toBe(2);
    });
  });
}
