import { afterAll, beforeAll } from "vitest";
import type { RepositoryContractOptions } from "./repository-fixture.js";

/**
 * Opens the store before the enclosing describe block's first test and closes it after the
 * last. Answers a getter, because the fixture exists only once the hook has run.
 * Internal to the contract suites.
 */
export function useRepositoryFixture<F extends { close?(): Promise<void> }>(
  open: () => Promise<F>,
  options: RepositoryContractOptions,
): () => F {
  let fixture: F | undefined;
  beforeAll(async () => {
    fixture = await open();
  }, options.hookTimeoutMs);
  afterAll(async () => {
    await fixture?.close?.();
  }, options.hookTimeoutMs);
  return () => {
    if (fixture === undefined) throw new Error("the repository fixture is not open: did open() fail?");
    return fixture;
  };
}
