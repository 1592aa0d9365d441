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
 *
 * Cases are written out whole, one object each, their requests and checks in the order the docs
 * page states them, so that a failure's name leads to all that case does; so they look alike (a
 * shared user, a post, a request, a check) without repeating one logic, and what several cases do
 * alike lives in support/ (the fixture, the expectations, the wire shapes, the token forge).
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
