import { defineConfig } from "vitest/config";

/** This package's own tests (`pnpm --filter @posts/conformance test`); they need no service. */
export default defineConfig({
  test: { include: ["test/**/*.test.ts"] },
});
