import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { onSources, reporters } from "./vitest.shared.js";

/** The order the topology's files run in, by file name; any other file runs after them. */
const FILE_ORDER = ["service.test.ts", "standby-reads.test.ts", "migrations.test.ts"];

/**
 * Runs the files in {@link FILE_ORDER}, not in vitest's own order (longest first from its cache,
 * by size without one), because the files share one topology and what one leaves behind reaches
 * the next: the conformance suite of service.test.ts, run right after standby-reads.test.ts
 * (whose last test stops and restarts the primary), had some registrations answered 503 in two
 * runs out of two, and passes when it runs first, as it always had until a larger
 * standby-reads.test.ts moved ahead of it. The cause is not found yet; the order is fixed so
 * that it does not depend on the files' sizes.
 */
class TopologyOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = FILE_ORDER.findIndex((name) => file.moduleId.endsWith(`/${name}`));
      return at === -1 ? FILE_ORDER.length : at;
    };
    return [...files].sort((a, b) => rank(a) - rank(b));
  }
}

/**
 * The tests on a real topology (`pnpm test:topology`): a primary, two streaming standbys,
 * PgBouncer, three service instances and HAProxy, started once for all files by the global
 * setup and stopped by pid when they end. Not part of `pnpm test`, which needs only the
 * machine's PostgreSQL; CI runs it as a step of its own.
 */
export default defineConfig({
  test: {
    reporters: [...reporters],
    sequence: { sequencer: TopologyOrder },
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
