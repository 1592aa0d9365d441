import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { SERVICE_NODE_FLAGS } from "../src/node-flags.js";

const ROOT = new URL("../../../", import.meta.url);
const run = promisify(execFile);

// Allocates objects that live through a few scavenges, as a loaded service's requests do, and
// prints the young generation's largest size, in bytes.
const YOUNG_GENERATION_PEAK = `
  const v8 = require("node:v8");
  let kept = [];
  let peak = 0;
  for (let i = 0; i < 2e6; i++) {
    kept.push({ i, text: "x" + i });
    if (kept.length > 20000) kept = kept.slice(10000);
    if (i % 10000 === 0) {
      const young = v8.getHeapSpaceStatistics().find((space) => space.space_name === "new_space");
      peak = Math.max(peak, young.space_size);
    }
  }
  console.log(peak);
`;

async function youngGenerationPeak(flags: readonly string[]): Promise<number> {
  const { stdout } = await run(process.execPath, [...flags, "-e", YOUNG_GENERATION_PEAK]);
  return Number(stdout.trim());
}

describe("the node flags the service runs with", () => {
  it("are what `pnpm start` and the container image pass before the main module", async () => {
    const manifest = JSON.parse(await readFile(new URL("package.json", ROOT), "utf8"));
    expect(manifest.scripts.start).toContain(
      `node ${SERVICE_NODE_FLAGS.join(" ")} packages/app/dist/main.js`,
    );
    const dockerfile = await readFile(new URL("Dockerfile", ROOT), "utf8");
    const command = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(JSON.parse(command ?? "null")).toEqual(["node", ...SERVICE_NODE_FLAGS, "dist/main.js"]);
  });

  it("keep V8's young generation within two semi-spaces of 8 MB, where it grows to 32 MB without them", async () => {
    const [bounded, unbounded] = await Promise.all([
      youngGenerationPeak(SERVICE_NODE_FLAGS),
      youngGenerationPeak([]),
    ]);
    expect(bounded).toBeGreaterThan(0);
    expect(bounded).toBeLessThanOrEqual(16 * 1024 * 1024);
    expect(unbounded).toBeGreaterThan(16 * 1024 * 1024);
  });
});
