import { fileURLToPath } from "node:url";
import { defineConfig, defineProject } from "vitest/config";

/**
 * The nemesis tests on the failover topology (`pnpm test:failover`): etcd, Patroni with
 * PostgreSQL in strict synchronous mode, HAProxy, three service instances and a NATS cluster,
 * started once for all files by the global setup and stopped by pid when they end, while the
 * tests kill, freeze and resume its processes under load. Not part of `pnpm test`, which needs
 * only the machine's PostgreSQL.
 */
export default defineConfig({
  test: {
    reporters: process.env.VITEST_JSON_REPORT
      ? ["default", ["json", { outputFile: process.env.VITEST_JSON_REPORT }]]
      : ["default"],
    projects: [
      defineProject({
        ssr: { resolve: { conditions: ["@posts/source"] } },
        resolve: { conditions: ["@posts/source"] },
        test: {
          name: "failover",
          root: fileURLToPath(new URL("./scripts/topology", import.meta.url)),
          include: ["nemesis/**/*.test.ts"],
          // The checker's own test needs no topology: `pnpm test` runs it.
          exclude: ["nemesis/history.test.ts"],
          globalSetup: ["nemesis/global-setup.ts"],
          // One topology, whose nodes the tests kill and restart: one file, one test at a time.
          fileParallelism: false,
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      }),
    ],
  },
});
