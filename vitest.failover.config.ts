import { defineConfig } from "vitest/config";
import { onSources, reporters } from "./vitest.shared.js";

/**
 * The nemesis tests on the failover topology (`pnpm test:failover`): etcd, Patroni with
 * PostgreSQL in strict synchronous mode, HAProxy, three service instances and a NATS cluster,
 * started once for all files by the global setup and stopped by pid when they end, while the
 * tests kill, freeze and resume its processes under load. Not part of `pnpm test`, which needs
 * only the machine's PostgreSQL; CI runs it as a step of its own.
 */
export default defineConfig({
  test: {
    reporters: [...reporters],
    projects: [
      onSources("./scripts/topology", {
        name: "failover",
        include: ["nemesis/**/*.test.ts"],
        // The checker's own test needs no topology: `pnpm test` runs it.
        exclude: ["nemesis/history.test.ts"],
        globalSetup: ["nemesis/global-setup.ts"],
        // One topology, whose nodes the tests kill and restart: one file, one test at a time.
        fileParallelism: false,
        testTimeout: 300_000,
        hookTimeout: 300_000,
      }),
    ],
  },
});
