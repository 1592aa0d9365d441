import type { ApiClient } from "../http/api-client.js";
import type { ConformanceOptions } from "../parse-arguments.js";
import type { Fixture } from "../support/fixture.js";
import type { TokenForge } from "../support/token-forge.js";

/** What a case works with. */
export interface CaseContext {
  readonly api: ApiClient;
  readonly fixture: Fixture;
  readonly options: ConformanceOptions;
  /** Signs with the deployment's key. Only for cases that declare `needsSecret`; others get an error. */
  readonly forge: TokenForge;
}

/**
 * One check of the contract, run against the deployment. It passes when `run` resolves, fails
 * when it rejects (a `Mismatch` says what was expected and what came back).
 */
export interface ConformanceCase {
  /** The docs page and heading it checks, e.g. `docs/posts.md#create-post-apiv1posts`; cases are
   * grouped under it. */
  readonly section: string;
  /** What the deployment must do, as a sentence. */
  readonly name: string;
  /** Whether it forges tokens with the deployment's key: skipped (and listed) without `--jwt-secret`. */
  readonly needsSecret?: boolean;
  run(context: CaseContext): Promise<void>;
}
