import type { RunStatement } from "@posts/adapters-postgres";
import { describe, expect, it } from "vitest";
import { Standby, type StandbyTimings } from "../../../src/connection/standby-reads/standby.js";
import { controlledRunner } from "./controlled-runner.js";

// The standby reads on real standbys are tested in scripts/topology (pnpm test:topology); these
// are the parts that need no server.

describe("a standby", () => {
  const timings = (now: { value: number }): StandbyTimings => ({
    now: () => now.value,
    pollIntervalMs: 1,
    probeIntervalMs: 5,
    knowledgeTtlMs: 100,
  });
  const unavailable = (error: unknown) => error instanceof Error && error.message.includes("ECONNREFUSED");

  it("is trusted without a check only while what it reported is recent", async () => {
    const now = { value: 0 };
    const { run, calls } = controlledRunner();
    const standby = new Standby("s", run, timings(now), unavailable);
    const reached = standby.reach(0x50n, 1000, new AbortController().signal);
    calls[0]?.answer([{ position: "0/80" }]);
    expect(await reached).toBe(true);
    expect(standby.knows(0x80n)).toBe(true);
    expect(standby.knows(0x81n)).toBe(false);
    now.value = 101;
    expect(standby.knows(0x50n)).toBe(false);
  });

  it("answers false when it has not replayed far enough by the deadline", async () => {
    const now = { value: 0 };
    let checks = 0;
    const run: RunStatement = async () => {
      checks += 1;
      return [{ position: "0/10" }];
    };
    const standby = new Standby("s", run, { ...timings(now), now: () => performance.now() }, unavailable);
    const started = performance.now();
    expect(await standby.reach(0x20n, performance.now() + 30, new AbortController().signal)).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    expect(checks).toBeGreaterThan(1);
    standby.close();
  });

  it("leaves the rotation when it cannot be reached or is no standby, and a probe brings it back", async () => {
    const now = { value: 0 };
    let answer: () => unknown[] = () => {
      throw new Error("connect ECONNREFUSED 127.0.0.1:5433");
    };
    const standby = new Standby("s", async () => answer(), timings(now), unavailable);
    expect(await standby.reach(0x10n, 1000, new AbortController().signal)).toBe(false);
    expect(standby.up).toBe(false);
    expect(standby.reason).toContain("ECONNREFUSED");
    answer = () => [{ position: null }];
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(standby.up).toBe(false);
    expect(standby.reason).toContain("not a standby");
    answer = () => [{ position: "0/20" }];
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(standby.up).toBe(true);
    expect(standby.knows(0x20n)).toBe(true);
    standby.close();
  });

  it("stays in the rotation after a failure of one statement that is no outage", () => {
    const standby = new Standby("s", async () => [], timings({ value: 0 }), unavailable);
    expect(standby.failed(Object.assign(new Error("syntax error"), { code: "42601" }))).toBe(false);
    expect(standby.up).toBe(true);
  });
});
