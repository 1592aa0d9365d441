import { defineConfig } from "vitest/config";
import { onSources, reporters } from "./vitest.shared.js";

/**
 * The storm (`pnpm test:storm`): one real process on PostgreSQL under 200 replaying streams, 50
 * JSON pages and 20 one-character searches at once over 50 posts of 10 MB, held to the bounds of
 * docs/change-events.md#what-one-instance-bears. A CI stage of its own rather than part of
 * `pnpm test`: /health's p99 bound measures the service only when nothing else competes for the
 * two cores it shares with its readers and PostgreSQL (bench/RESULTS.md#bounded-work).
 */
export default defineConfig({
  test: {
    reporters: [...reporters],
    projects: [
      onSources("./packages/app", {
        name: "storm",
        include: ["test/reliability/storm.test.ts"],
        testTimeout: 300_000,
        hookTimeout: 90_000,
      }),
    ],
  },
});
