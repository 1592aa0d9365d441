import { afterAll, beforeAll } from "vitest";
import type { OpenRepositories, RepositoryContractOptions, RepositoryFixture } from "./repository-fixture.js";

/**
 * Opens the store before the enclosing describe block's first test and closes it after the
 * last. Answers a getter, because the fixture exists only once the hook has run.
 * Internal to the contract suites.
 */
export function useRepositoryFixture(
  open: OpenRepositories,
  options: RepositoryContractOptions,
): () => RepositoryFixture {
  let fixture: RepositoryFixture | undefined;
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
