import { describe, expect, it } from "vitest";
import {
  afterWarmUp,
  analyzeLoad,
  type CollectedHeapReading,
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
