import { setTimeout as sleep } from "node:timers/promises";
import { postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { timedFetch } from "./api-client.js";
import { type InProcessService, startInProcessService } from "./in-process-service.js";
import { serverOf, useSuiteDatabase } from "./postgres-suite.js";
import { TcpProxy } from "./tcp-proxy.js";

const CONNECT_TIMEOUT_MS = 1000;
const STATEMENT_TIMEOUT_MS = 500;
const SLACK_MS = 1000;

describeNeeding(
  await postgresForTests(),
  "GET /health and GET /ready while the database comes and goes",
  () => {
    const database = useSuiteDatabase();
    let proxy: TcpProxy;
    let service: InProcessService;

    const probe = async () => {
      const [health, ready] = await Promise.all([
        timedFetch(`${service.url}/health`),
        timedFetch(`${service.url}/ready`),
      ]);
      return { health, ready };
    };

    /** Liveness never depends on the database, and never waits for it. */
    const expectAlive = (health: Awaited<ReturnType<typeof timedFetch>>) => {
      expect(health.status).toBe(200);
      expect(JSON.parse(health.body)).toEqual({ status: "ok" });
      expect(health.elapsedMs).toBeLessThan(SLACK_MS);
    };

    const expectNotReady = (ready: Awaited<ReturnType<typeof timedFetch>>) => {
      expect(ready.status, ready.body).toBe(503);
      expect(ready.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(JSON.parse(ready.body)).toMatchObject({
        status: 503,
        error: "Service Unavailable",
        path: "/ready",
      });
    };

    beforeAll(async () => {
      proxy = await TcpProxy.start(serverOf(database().connectionString));
      service = await startInProcessService({
        DATABASE_URL: proxy.proxied(database().connectionString),
        DB_POOL_SIZE: "2",
        DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
        DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      });
    });

    afterAll(async () => {
      await service?.close();
      await proxy?.close();
    });

    it("is live and ready while the database answers", async () => {
      const { health, ready } = await probe();
      expectAlive(health);
      expect(ready.status).toBe(200);
      expect(JSON.parse(ready.body)).toEqual({ status: "ok" });
    });

    it("is live but not ready while the database refuses connections, and ready again once it is back", async () => {
      await proxy.refuse();
      for (let round = 0; round < 3; round++) {
        const { health, ready } = await probe();
        expectAlive(health);
        expectNotReady(ready);
        expect(ready.elapsedMs).toBeLessThan(CONNECT_TIMEOUT_MS + SLACK_MS);
      }

      await proxy.restore();
      const { health, ready } = await probe();
      expectAlive(health);
      expect(ready.status, ready.body).toBe(200);
    });

    it("is live but not ready, within the timeouts, while a partition swallows every byte", async () => {
      // Both a fresh connection (connect timeout) and the pooled ones (query timeout) are stalled.
      await Promise.all([probe(), probe()]);
      proxy.blackhole();
      const [first, second] = await Promise.all([probe(), probe(), sleep(50).then(probe)]);
      for (const { health, ready } of [first, second]) {
        expectAlive(health);
        expectNotReady(ready);
        // A stalled pooled connection waits for the query timeout: statement timeout + 1 s.
        expect(ready.elapsedMs).toBeLessThan(STATEMENT_TIMEOUT_MS + 1000 + SLACK_MS);
      }

      await proxy.restore();
      // Liveness holds on every probe while readiness comes back; checked after the wait, as a
      // failure inside it would only be retried.
      const whileNotReady: Awaited<ReturnType<typeof probe>>["health"][] = [];
      await vi.waitFor(
        async () => {
          const { health, ready } = await probe();
          if (ready.status !== 200) whileNotReady.push(health);
          expect(ready.status, ready.body).toBe(200);
        },
        { timeout: 5000, interval: 100 },
      );
      for (const health of whileNotReady) expectAlive(health);
    });
  },
);
