/**
 * Writes the settings table of packages/app/README.md from the settings schema (src/settings.ts).
 * `--check` writes nothing and exits 1 when the README's table differs from the schema's.
 */
import { readFile, writeFile } from "node:fs/promises";
import { withSettingsTable } from "../src/settings-table.js";

const readmeUrl = new URL("../README.md", import.meta.url);
const readme = await readFile(readmeUrl, "utf8");
const updated = withSettingsTable(readme);

if (process.argv.includes("--check")) {
  if (updated !== readme) {
    console.error(
      "packages/app/README.md: the settings table differs from src/settings.ts; run pnpm --filter @posts/app settings:table",
    );
    process.exitCode = 1;
  }
} else if (updated !== readme) {
  await writeFile(readmeUrl, updated);
  console.warn("packages/app/README.md: settings table written");
}
