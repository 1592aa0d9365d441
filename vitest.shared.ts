import { fileURLToPath } from "node:url";
import { defineProject, type TestProjectInlineConfiguration } from "vitest/config";

/**
 * The reporters of every vitest configuration: with `VITEST_JSON_REPORT` set, a JSON report
 * beside the default one, from which CI reads the counts of its closing "N passed, M failed" line.
 */
export const reporters = process.env.VITEST_JSON_REPORT
  ? (["default", ["json", { outputFile: process.env.VITEST_JSON_REPORT }]] as const)
  : (["default"] as const);

/**
 * A project whose tests run on the TypeScript sources, through the packages' `@posts/source`
 * export condition, in the folder `root` (relative to the repository).
 */
export function onSources(root: string, test: NonNullable<TestProjectInlineConfiguration["test"]>) {
  return defineProject({
    ssr: { resolve: { conditions: ["@posts/source"] } },
    resolve: { conditions: ["@posts/source"] },
    test: { ...test, root: fileURLToPath(new URL(root, import.meta.url)) },
  });
}
