import { describe, expect, it } from "vitest";
import {
  afterWarmUp,
  analyzeLoad,
  type CollectedHeapReading,
  judgedFrom,
  LEAK_BOUNDS,
  leakVerdict,
} from "../src/soak/soak-analysis.js";
import type { RequestRecord } from "../src/soak/soak-load.js";

const MIB = 2 ** 20;
/** Readings one minute apart: `heap(i)` after collections, `cache(i)` held by the caches. */
const series = (count: number, heap: (i: number) => number, cache: (i: number) => number = () => 0) =>
  Array.from(
    { length: count },
    (_, i): CollectedHeapReading => ({
      at: 1_000_000 + i * 60_000,
      heapBytes: heap(i),
      cacheBytes: cache(i),
    }),
  );
/** A deterministic wobble of ± 0.5 MiB, as requests in flight move the heap between readings. */
const wobble = (i: number) => ((i * 7919) % 11) / 10 - 0.5;

describe("leakVerdict", () => {
  it("passes a flat heap that wobbles", () => {
    const analysis = leakVerdict(series(60, (i) => (30 + wobble(i)) * MIB));
    expect(analysis.verdict).toBe("pass");
    expect(Math.abs(analysis.growthBytes)).toBeLessThan(MIB);
    expect(analysis.readings).toBe(48);
  });

  it("fails a heap that grows steadily by more than the bounds allow", () => {
    // 0.1 MiB a minute: 6 MiB an hour, about 3.6 MiB between the judged quarters' medians.
    const analysis = leakVerdict(series(60, (i) => (30 + 0.1 * i + wobble(i)) * MIB));
    expect(analysis.verdict).toBe("fail");
    expect(analysis.growthBytes).toBeGreaterThan(LEAK_BOUNDS.bytes);
    expect(analysis.slopeBytesPerHour / MIB).toBeCloseTo(6, 0);
  });

  it("passes a cache filling to its bound, as the caches report it, and fails the same heap judged without them", () => {
    // The cache fills by 0.5 MiB a minute up to 20 MiB; the rest of the heap stays at 30 MiB.
    const cache = (i: number) => Math.min(20, 0.5 * i) * MIB;
    const readings = series(60, (i) => (30 + wobble(i)) * MIB + cache(i), cache);
    expect(leakVerdict(readings).verdict).toBe("pass");
    expect(leakVerdict(readings.map((reading) => ({ ...reading, cacheBytes: 0 }))).verdict).toBe("fail");
  });

  it("fails a leak beside a cache that fills", () => {
    const cache = (i: number) => Math.min(20, 0.5 * i) * MIB;
    const analysis = leakVerdict(series(60, (i) => (30 + 0.1 * i + wobble(i)) * MIB + cache(i), cache));
    expect(analysis.verdict).toBe("fail");
    expect(analysis.cacheLastBytes).toBe(20 * MIB);
  });

  it("leaves the warm-up out: growth in the first fifth of the run is not judged", () => {
    // Code compiled and pools opened at the start: +8 MiB in the first ten minutes, then flat.
    const analysis = leakVerdict(series(60, (i) => (30 + Math.min(8, 0.8 * i) + wobble(i)) * MIB));
    expect(analysis.verdict).toBe("pass");
    expect(analysis.baselineBytes / MIB).toBeGreaterThan(37);
  });

  it("takes medians, so that one reading in the middle of a burst fails nothing", () => {
    const analysis = leakVerdict(series(60, (i) => (i === 58 ? 60 : 30 + wobble(i)) * MIB));
    expect(analysis.verdict).toBe("pass");
  });

  it("allows the larger of its byte bound and its share of the baseline", () => {
    const big = leakVerdict(series(60, (i) => (100 + wobble(i)) * MIB));
    expect(big.allowedBytes).toBeCloseTo(10 * MIB, -5);
    const grown = leakVerdict(series(60, (i) => (100 + (i >= 30 ? 8 : 0)) * MIB));
    expect(grown.verdict).toBe("pass");
  });

  it("is inconclusive with too few readings, and ignores readings of 0 (no answer)", () => {
    expect(leakVerdict(series(6, () => 30 * MIB)).verdict).toBe("inconclusive");
    const withGaps = series(60, (i) => (i % 5 === 0 ? 0 : 30 + wobble(i)) * MIB);
    const analysis = leakVerdict(withGaps);
    expect(analysis.verdict).toBe("pass");
    expect(analysis.readings).toBeLessThan(48);
  });
});

/**
 * The shape of the hour of 2026-11-24 (bench/SOAK.md), one reading a minute: the post cache's
 * estimate climbs to its bound of 36 MiB at minute 12 and stays there, while what its entries
 * really retain grows by about 4 MiB between minutes 17 and 21 (strings flattened, hash tables
 * grown in steps), then nothing moves but the wobble. `leakPerMinute` adds a leak on top.
 */
const BOUND = 36 * MIB;
const hourOfCacheSettling = (leakPerMinute = 0) => {
  const cache = (i: number) => Math.min(BOUND, (BOUND * i) / 12);
  const settling = (i: number) => Math.min(4.2, Math.max(0, (i - 17) * 1.05));
  return series(60, (i) => (23 + settling(i) + leakPerMinute * i + wobble(i)) * MIB + cache(i), cache);
};

describe("the judged window, given the cache's bound", () => {
  it("starts at twice the time the cache took to reach its bound, so that its settling after the bound is not judged", () => {
    const readings = hourOfCacheSettling();
    const window = judgedFrom(readings, LEAK_BOUNDS, BOUND);
    expect(window.rule).toBe("cache settled");
    expect(window.cacheFullAt).toBe(readings[12]?.at);
    expect(window.from).toBe(readings[24]?.at);
    const analysis = leakVerdict(readings, LEAK_BOUNDS, BOUND);
    expect(analysis.verdict, JSON.stringify(analysis)).toBe("pass");
    expect(analysis.readings).toBe(36);
  });

  it("fails the same hour judged from a fifth of the run, as the check did before (the hour's FAIL)", () => {
    const early = leakVerdict(hourOfCacheSettling());
    expect(early.window.rule).toBe("share of the run");
    expect(early.verdict).toBe("fail");
    expect(early.growthBytes / MIB).toBeGreaterThan(3);
  });

  it("still fails a leak of 9 MiB an hour beside the settling cache", () => {
    const leaking = leakVerdict(hourOfCacheSettling(0.15), LEAK_BOUNDS, BOUND);
    expect(leaking.window.rule).toBe("cache settled");
    expect(leaking.verdict, JSON.stringify(leaking)).toBe("fail");
  });

  it("keeps the fifth of the run when the cache never reaches its bound, or reached it within the first tenth", () => {
    const filling = series(
      60,
      () => 30 * MIB,
      (i) => i * 0.5 * MIB,
    );
    expect(judgedFrom(filling, LEAK_BOUNDS, BOUND)).toMatchObject({
      rule: "share of the run",
      cacheFullAt: undefined,
    });
    const quick = series(
      60,
      () => 60 * MIB,
      (i) => Math.min(BOUND, (BOUND * i) / 3),
    );
    expect(judgedFrom(quick, LEAK_BOUNDS, BOUND)).toMatchObject({
      rule: "share of the run",
      cacheFullAt: quick[3]?.at,
    });
    expect(leakVerdict(quick, LEAK_BOUNDS, BOUND).readings).toBe(48);
  });

  it("is inconclusive when the cache reached its bound too late in the run to have settled", () => {
    const late = series(
      60,
      () => 30 * MIB,
      (i) => Math.min(BOUND, (BOUND * i) / 45),
    );
    const analysis = leakVerdict(late, LEAK_BOUNDS, BOUND);
    expect(analysis.window.cacheFullAt).toBe(late[44]?.at);
    expect(analysis.verdict).toBe("inconclusive");
  });
});

describe("afterWarmUp", () => {
  it("keeps the samples after the first share of their time span, whatever their order", () => {
    const samples = [40, 0, 10, 20, 30, 100, 80].map((at) => ({ at, bytes: 1 }));
    expect(afterWarmUp(samples, 0.2).map((sample) => sample.at)).toEqual([40, 20, 30, 100, 80]);
    expect(afterWarmUp(samples, 0)).toHaveLength(7);
  });
});

describe("analyzeLoad", () => {
  const at = 1_000_000;
  const record = (
    entry: Partial<RequestRecord> & Pick<RequestRecord, "op" | "status">,
    t: number,
  ): RequestRecord => ({
    sentAt: at + t,
    doneAt: at + t + 5,
    ...entry,
  });
  const restart = { stopAt: at + 100, stoppedAt: at + 150, startAt: at + 200, startedAt: at + 250 };

  it("counts retries that named another post than their first 201, and acknowledges the posts of both", () => {
    const records = [
      record({ op: "create", status: 201, postId: 1, key: "a" }, 0),
      record({ op: "retry", status: 201, postId: 1, key: "a" }, 10),
      record({ op: "create", status: 201, postId: 2, key: "b" }, 20),
      record({ op: "retry", status: 201, postId: 3, key: "b" }, 30),
      record({ op: "create", status: 503, key: "c" }, 120),
      record({ op: "retry", status: 201, postId: 4, key: "c" }, 300),
      record({ op: "search", status: 200 }, 310),
    ];
    const analysis = analyzeLoad(records, [restart]);
    expect(analysis.retries).toEqual({ sent: 3, bothCreated: 2, otherPost: 1 });
    expect([...analysis.acknowledgedIds].sort()).toEqual([1, 1, 2, 3, 4]);
    expect(analysis.byOperation).toMatchObject({ create: 3, retry: 3, search: 1 });
    expect(analysis.failures).toBe(1);
    expect(analysis.failuresBeforeRestarts).toBe(0);
  });

  it("tells answers to requests caught by a heap snapshot from failures of a restart: 503 or a client timeout there, nothing else", () => {
    const pause = { from: at + 20, to: at + 60 };
    const records = [
      record({ op: "list", status: 200 }, 0),
      record({ op: "search", status: 503 }, 18),
      record({ op: "read", status: -1 }, 30),
      record({ op: "read", status: 500 }, 50),
      record({ op: "create", status: 0 }, 55),
      record({ op: "list", status: 503 }, 120),
    ];
    const analysis = analyzeLoad(records, [restart], [pause]);
    expect(analysis.failures).toBe(5);
    expect(analysis.failuresDuringPauses).toBe(4);
    expect(analysis.failuresBeforeRestarts).toBe(0);
    expect(analysis.unexpected).toBe(2);
    expect(analysis.outages[0]?.failures).toBe(1);
    const unpaused = analyzeLoad(records, [restart]);
    expect(unpaused.failuresBeforeRestarts).toBe(4);
    expect(unpaused.unexpected).toBe(3);
  });
});
