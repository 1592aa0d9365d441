import { spawnSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it } from "vitest";
import { driveWithWrk } from "../src/load/load.js";

/** A port below Linux's ephemeral range that no other test uses. */
const PORT = 26111;
/** Every tenth request waits this long before its answer. */
const SLOW_MS = 30;

describeNeeding(
  {
    needs: "wrk",
    hint: "apt-get install wrk",
    present: spawnSync("wrk", ["--version"], { stdio: "ignore" }).error === undefined,
  },
  "the closed loop's driver, wrk",
  () => {
    let server: Server;
    const seen = new Map<string, number>();
    beforeAll(async () => {
      server = createServer((request, response) => {
        const path = request.url ?? "";
        seen.set(path, (seen.get(path) ?? 0) + 1);
        response.statusCode = path.endsWith("/404") ? 404 : 200;
        if (path.endsWith("/10")) setTimeout(() => response.end("{}"), SLOW_MS);
        else response.end("{}");
      });
      await new Promise<void>((resolve) => server.listen(PORT, "127.0.0.1", resolve));
    });
    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    it("reports every latency as measured, one per response, not wrk's corrected histogram", async () => {
      seen.clear();
      // Ids 1 to 10 drawn at random on one connection: one request in ten takes 30 ms.
      const request = `request = function() return wrk.format("GET", "/p/" .. math.random(10)) end`;
      const slice = await driveWithWrk(`http://127.0.0.1:${PORT}`, request, 1, 2);
      const answered = [...seen.values()].reduce((sum, count) => sum + count, 0);
      // The one request in flight when wrk stops may be seen by the server and not answered.
      expect(slice.latencies.length).toBeGreaterThanOrEqual(answered - 1);
      expect(slice.latencies.length).toBeLessThanOrEqual(answered);
      expect([...seen.keys()].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `/p/${i + 1}`).sort());
      const slow = slice.latencies.sorted().filter((ms) => ms >= SLOW_MS).length;
      // Measured: about a tenth. wrk's correction would add a latency every mean interval (about
      // 3 ms here) below each slow one, making them about half of all.
      expect(slow / slice.latencies.length).toBeGreaterThan(0.05);
      expect(slow / slice.latencies.length).toBeLessThan(0.2);
      expect(slice.non2xx).toBe(0);
      expect(slice.errors).toBe(0);
      expect(slice.seconds).toBeGreaterThan(1.9);
    });

    it("counts answers of 400 and above as unexpected", async () => {
      const request = `request = function() return wrk.format("GET", "/p/" .. (math.random(2) == 1 and "404" or "1")) end`;
      const slice = await driveWithWrk(`http://127.0.0.1:${PORT}`, request, 4, 1);
      expect(slice.non2xx).toBeGreaterThan(slice.latencies.length * 0.4);
      expect(slice.non2xx).toBeLessThan(slice.latencies.length * 0.6);
      expect(slice.badStatuses).toEqual({ "400 and above": slice.non2xx });
    });
  },
);
