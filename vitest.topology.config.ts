import { defineConfig } from "vitest/config";
import { onSources, reporters } from "./vitest.shared.js";

/**
 * The tests on a real topology (`pnpm test:topology`): a primary, two streaming standbys,
 * PgBouncer, three service instances and HAProxy, started once for all files by the global
 * setup and stopped by pid when they end. Not part of `pnpm test`, which needs only the
 * machine's PostgreSQL; CI runs it as a step of its own.
 */
export default defineConfig({
  test: {
    reporters: [...reporters],
    projects: [
      onSources("./scripts/topology", {
        name: "topology",
        include: ["test/**/*.test.ts"],
        globalSetup: ["test/global-setup.ts"],
        // One topology, whose servers the tests stop and start: one file at a time.
        fileParallelism: false,
        testTimeout: 120_000,
        hookTimeout: 300_000,
      }),
    ],
  },
});
