import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig, defineProject } from "vitest/config";
import { onSources, reporters } from "./vitest.shared.js";

/**
 * The app's tests that need the machine to themselves: those that start several instances of the
 * service at once, those that hold one process to a latency bound (a stall of 250 ms is what
 * they catch, and a saturated machine makes one of its own), and the ones that send gigabytes of large posts through one process to bound its memory
 * (a load that would stall the others, and whose answers within the wait for room depend on the
 * cores it gets).
 */
const ALONE = [
  "test/multi-instance/**/*.test.ts",
  "test/events/change-feed-cluster.test.ts",
  "test/chaos/**/*.test.ts",
  "test/reliability/embedded-large-post-stall.test.ts",
  "test/reliability/large-post-reads.test.ts",
  "test/reliability/large-post-writes.test.ts",
];

/**
 * The storm of docs/change-events.md#what-one-instance-bears, run by `pnpm test:storm`
 * (vitest.storm.config.ts) and not by `pnpm test`: it holds the process to its memory bound, which
 * it meets, and /health to a p99 of 100 ms, which it meets by a thin margin on two shared cores.
 */
const STORM = "test/reliability/storm.test.ts";

/** A package's tests, run on its TypeScript sources. */
const project = (
  name: string,
  extra: { testTimeout?: number; hookTimeout?: number; exclude?: string[] } = {},
) => onSources(`./packages/${name}`, { name, include: ["test/**/*.test.ts"], ...extra });

export default defineConfig({
  test: {
    reporters: [...reporters],
    projects: [
      project("domain"),
      project("adapters-postgres", { testTimeout: 30_000, hookTimeout: 60_000 }),
      project("adapters-http", { testTimeout: 20_000, hookTimeout: 60_000 }),
      project("adapters-nats", { testTimeout: 60_000, hookTimeout: 60_000 }),
      project("app", {
        testTimeout: 60_000,
        hookTimeout: 90_000,
        exclude: [...configDefaults.exclude, ...ALONE, STORM],
      }),
      // After every other project, one file at a time: each file starts several service processes or
      // holds one to a latency bound, and the timings they check (a change reaching every stream
      // within a second, no request held 250 ms) are not meant to hold on a saturated machine.
      onSources("./packages/app", {
        name: "app-alone",
        include: ALONE,
        fileParallelism: false,
        sequence: { groupOrder: 1 },
        testTimeout: 120_000,
        hookTimeout: 90_000,
      }),
      project("conformance"),
      project("client"),
      // The repository's own Markdown: every relative link resolves to a file inside it.
      defineProject({
        test: {
          name: "repository",
          root: fileURLToPath(new URL("./scripts", import.meta.url)),
          include: ["markdown-links.test.ts"],
        },
      }),
      // The failover nemesis's checker, on histories made by hand (the nemesis is `pnpm test:failover`).
      defineProject({
        test: {
          name: "failover-checker",
          root: fileURLToPath(new URL("./scripts/topology", import.meta.url)),
          include: ["nemesis/history.test.ts"],
        },
      }),
      // The soak's analysis and the test of its memory check (the soak itself is `pnpm soak`).
      defineProject({
        test: {
          name: "bench",
          root: fileURLToPath(new URL("./bench", import.meta.url)),
          include: ["test/**/*.test.ts"],
          // The memory check's test forces about fifty full collections in two fixture processes.
          testTimeout: 120_000,
        },
      }),
      // The packed libraries installed with npm outside the workspace, and the examples run on them.
      defineProject({
        test: {
          name: "packed",
          root: fileURLToPath(new URL("./scripts", import.meta.url)),
          include: ["check-packages.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 300_000,
        },
      }),
    ],
  },
});
