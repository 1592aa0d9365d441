/**
 * The test of the soak's memory check itself: a small fixture server (not the product) is
 * driven through the same code the soak uses on the service (its inspector, full collections
 * forced through it, the cache's bytes read from /metrics, leakVerdict). The fixture's bounded
 * cache fills during the run either way; with a deliberate leak the check must fail, without
 * it pass, and without subtracting the cache it must fail too, or the pass would prove nothing.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { HeapProbe, inspectorUrl } from "../src/soak/heap-probe.js";
import { metricValue } from "../src/soak/service-metrics.js";
import { type CollectedHeapReading, LEAK_BOUNDS, leakVerdict } from "../src/soak/soak-analysis.js";

const MIB = 2 ** 20;
const FIXTURE = fileURLToPath(new URL("./fixtures/heap-fixture-server.mjs", import.meta.url));
// Enough readings that the warm-up the verdict leaves out never leaves too few.
const STEPS = 24;
const REQUESTS_PER_STEP = 100;
const CONCURRENCY = 5;

const children = new Set<ChildProcess>();
const killAll = () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
};
process.once("exit", killAll);
afterAll(killAll);

/** The fixture's cache bound by default: the test's 2,400 requests fill it to 14.7 MiB, never to the bound. */
const DEFAULT_BOUND_MIB = 16;

/**
 * Runs the fixture in `mode` with its cache bounded to `boundMib`, drives it in steps, reads its
 * heap after each; answers the readings.
 */
async function readingsOf(
  mode: "leak" | "cache",
  boundMib = DEFAULT_BOUND_MIB,
): Promise<CollectedHeapReading[]> {
  const child = spawn(process.execPath, ["--inspect=127.0.0.1:0", FIXTURE, mode, String(boundMib)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  try {
    if (child.stdout === null || child.stderr === null) throw new Error("no pipes to the fixture");
    const inspector = inspectorUrl(child.stderr, () => undefined);
    const [portLine] = (await once(child.stdout, "data")) as [Buffer];
    const url = `http://127.0.0.1:${Number(portLine.toString().trim())}`;
    const probe = await HeapProbe.connect(await inspector);
    try {
      const readings: CollectedHeapReading[] = [];
      for (let step = 0; step < STEPS; step++) {
        for (let sent = 0; sent < REQUESTS_PER_STEP; sent += CONCURRENCY) {
          await Promise.all(
            Array.from({ length: CONCURRENCY }, () =>
              fetch(`${url}/work`).then((response) => response.text()),
            ),
          );
        }
        const heapBytes = await probe.collectedHeapBytes();
        // Readings spaced by the work done, not by the clock: the fixture leaks per request, and
        // a busy machine stalling one step must not move where the warm-up ends.
        readings.push({ at: step * 1000, heapBytes, cacheBytes: await metricValue(url, "post_cache_bytes") });
      }
      return readings;
    } finally {
      await probe.close();
    }
  } finally {
    child.kill("SIGTERM");
    if (child.exitCode === null) await once(child, "exit");
    children.delete(child);
  }
}

describe("the soak's memory check, on a fixture server", () => {
  it("passes a heap that grows only by a bounded cache filling, which it fails when the cache is not subtracted", async () => {
    const readings = await readingsOf("cache");
    const analysis = leakVerdict(readings, LEAK_BOUNDS, DEFAULT_BOUND_MIB * MIB);
    expect(analysis.window.cacheFullAt).toBeUndefined();
    expect(analysis.cacheLastBytes - analysis.cacheFirstBytes).toBeGreaterThan(8 * 2 ** 20);
    expect(analysis.verdict, JSON.stringify(analysis)).toBe("pass");
    const blind = leakVerdict(readings.map((reading) => ({ ...reading, cacheBytes: 0 })));
    expect(blind.verdict, JSON.stringify(blind)).toBe("fail");
  });

  it("fails a heap that leaks beside the same cache", async () => {
    const analysis = leakVerdict(await readingsOf("leak"), LEAK_BOUNDS, DEFAULT_BOUND_MIB * MIB);
    expect(analysis.verdict, JSON.stringify(analysis)).toBe("fail");
    expect(analysis.growthBytes).toBeGreaterThan(analysis.allowedBytes);
  });

  // A cache of 4 MiB is full about a quarter into the test: the verdict then judges only from
  // twice that time (judgedFrom), and must still tell the leak from the full cache there.
  it("judges from twice the time a cache took to reach its bound: passes the full cache, fails the leak beside it", async () => {
    const full = leakVerdict(await readingsOf("cache", 4), LEAK_BOUNDS, 4 * MIB);
    expect(full.window.rule, JSON.stringify(full)).toBe("cache settled");
    expect(full.readings).toBeGreaterThanOrEqual(LEAK_BOUNDS.minReadings);
    expect(full.verdict, JSON.stringify(full)).toBe("pass");
    const leaking = leakVerdict(await readingsOf("leak", 4), LEAK_BOUNDS, 4 * MIB);
    expect(leaking.window.rule).toBe("cache settled");
    expect(leaking.verdict, JSON.stringify(leaking)).toBe("fail");
  });
});
