import type { Prerequisite } from "@posts/domain/testing/vitest";

// Nothing here imports pg, statically or not: suites that trace pg's statements must be able to
// ask for this before pg is first loaded.

let runtimeAnswers: Promise<boolean> | undefined;

/**
 * Whether a container runtime answers (testcontainers' own probe, which fails within
 * milliseconds without one). Asked once per process; every later call shares the answer.
 */
export function containerRuntimeAnswers(): Promise<boolean> {
  // Imported only here: testcontainers is heavy, and absent from production installs.
  runtimeAnswers ??= import("testcontainers")
    .then(({ getContainerRuntimeClient }) => getContainerRuntimeClient())
    .then(
      () => true,
      () => false,
    );
  return runtimeAnswers;
}

/**
 * The prerequisite of a suite that runs on PostgreSQL (`openTestDatabase("postgres")`, give it
 * to `describeNeeding`): present when `DATABASE_URL` is set, or else when a container runtime
 * answers to start one in.
 */
export async function postgresForTests(): Promise<Prerequisite> {
  const present = Boolean(process.env.DATABASE_URL) || (await containerRuntimeAnswers());
  return {
    needs: "a PostgreSQL server",
    hint: "set DATABASE_URL=postgres://…, or run a container runtime",
    present,
  };
}
