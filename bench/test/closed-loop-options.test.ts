import { describe, expect, it } from "vitest";
import { closedLoopScenarios } from "../src/load/scenarios.js";
import { CLOSED_LOOP_CONNECTIONS, parseOptions } from "../src/options.js";

describe("--closed-loop", () => {
  it("gives each server one 8 s slice a round, over 5 rounds, unless told otherwise", () => {
    const options = parseOptions(["--", "--closed-loop"]);
    expect([options.closedLoop, options.duration, options.slice, options.rounds]).toEqual([true, 8, 8, 5]);
    const shorter = parseOptions(["--closed-loop", "--duration", "4", "--rounds", "2"]);
    expect([shorter.duration, shorter.slice, shorter.rounds]).toEqual([4, 4, 2]);
  });

  it("measures GET one at each number of connections, the busiest first", () => {
    const scenarios = closedLoopScenarios(CLOSED_LOOP_CONNECTIONS);
    expect(scenarios.map((s) => s.name)).toEqual(["get-one-c64", "get-one-c32", "get-one-c8", "get-one-c1"]);
    const fixture = {
      users: 1,
      posts: 10,
      tokens: ["t"],
      connections: 64,
      loginConnections: 16,
      searchConnections: 16,
    };
    const prepared = scenarios.map((s) => s.prepare(fixture, "http://127.0.0.1:1"));
    expect(prepared.map((p) => ("workload" in p ? p.workload.connections : undefined))).toEqual([
      64, 32, 8, 1,
    ]);
  });

  it("runs beside no other mode, and --only picks among its own scenarios", () => {
    for (const other of ["--embedded", "--curve", "--search-only"])
      expect(() => parseOptions(["--closed-loop", other])).toThrow(/--closed-loop measures GET one alone/);
    expect(parseOptions(["--closed-loop", "--only", "get-one-c1"]).only).toEqual(["get-one-c1"]);
    expect(closedLoopScenarios(CLOSED_LOOP_CONNECTIONS).map((s) => s.name)).toEqual([
      "get-one-c64",
      "get-one-c32",
      "get-one-c8",
      "get-one-c1",
    ]);
  });
});
