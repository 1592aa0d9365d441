import type { RunStatement } from "@posts/adapters-postgres";

/** A statement runner whose answers the test gives, one call at a time. */
export function controlledRunner() {
  const calls: { sql: string; answer: (rows: unknown[]) => void; fail: (error: unknown) => void }[] = [];
  const run: RunStatement = (sql) =>
    new Promise((resolve, reject) => {
      calls.push({ sql, answer: resolve, fail: reject });
    });
  return { run, calls };
}
