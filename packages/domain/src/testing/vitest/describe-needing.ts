import { describe, it } from "vitest";

/**
 * Something a suite needs from the machine that runs it and that a test run may lack: a
 * PostgreSQL server, a `nats-server` binary, a program the suite starts.
 */
export interface Prerequisite {
  /** What the suite needs, as a reader would ask for it: "a PostgreSQL server". */
  readonly needs: string;
  /** How to provide it: "set DATABASE_URL=postgres://…". */
  readonly hint: string;
  /** Whether the machine has it. */
  readonly present: boolean;
}

/**
 * A `describe` for a suite that needs `prerequisites` (one, or several that must all be there),
 * decided when the file is collected, so no test is left to skip itself at run time. All present:
 * the suite runs. One missing outside CI: the suite is reported as skipped, its name saying what
 * it needs and how to provide it. One missing under `CI=true`: the suite is one failing test
 * saying what is missing, because a CI run must never pass by not running what it was meant to.
 *
 * It lives in the domain's vitest kit because that is the one testing entry point every package
 * may import (adapters may not import each other); each adapter's kit says what its own
 * prerequisite is and whether it is there.
 */
export function describeNeeding(
  prerequisites: Prerequisite | readonly Prerequisite[],
  name: string,
  body: () => void,
): void {
  const missing = ([] as Prerequisite[]).concat(prerequisites).filter((each) => !each.present);
  if (missing.length === 0) {
    describe(name, body);
    return;
  }
  const needs = missing.map((each) => each.needs).join(" and ");
  const hints = missing.map((each) => each.hint).join("; ");
  if (process.env.CI === "true") {
    describe(name, () => {
      it(`has ${needs}`, () => {
        throw new Error(`CI=true and this suite lacks ${needs} (${hints})`);
      });
    });
  } else {
    describe.skip(`${name} (skipped: needs ${needs}; ${hints})`, body);
  }
}
