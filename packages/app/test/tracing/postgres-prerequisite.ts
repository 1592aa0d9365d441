import { describe, it } from "vitest";

/** The PostgreSQL server the trace suites need (pg's statement spans), when one is configured. */
export const DATABASE_URL: string | undefined = process.env.DATABASE_URL || undefined;

const SKIP_REASON = "skipped: set DATABASE_URL=postgres://… to run it";

/**
 * A `describe` that needs PostgreSQL, statement spans being pg's. Without DATABASE_URL it is
 * skipped with the reason in its name, except under CI=true, where a missing server fails it.
 * Nothing here imports pg: these suites must start tracing before pg is first loaded.
 */
export function describeWithPostgres(name: string, body: () => void): void {
  if (DATABASE_URL !== undefined) {
    describe(name, body);
  } else if (process.env.CI === "true") {
    describe(name, () => {
      it("has the PostgreSQL server it needs", () => {
        throw new Error("DATABASE_URL is not set, and CI=true: this suite needs PostgreSQL");
      });
    });
  } else {
    describe.skip(`${name} (${SKIP_REASON})`, body);
  }
}
