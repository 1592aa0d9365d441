import type { Clock } from "../ports/clock.js";
import type { PasswordHasher } from "../ports/password-hasher.js";
import type { PostRepository } from "../ports/post-repository.js";
import type { TokenIssuer } from "../ports/token-issuer.js";
import type { UserRepository } from "../ports/user-repository.js";

/** Every port and setting a use case may need; each use case takes only the slice it uses. */
export interface Dependencies {
  readonly posts: PostRepository;
  readonly users: UserRepository;
  readonly clock: Clock;
  readonly hasher: PasswordHasher;
  readonly tokens: TokenIssuer;
  /**
   * How long, in milliseconds, an idempotency key of `createPost` is remembered after the post
   * it made (`IDEMPOTENCY_TTL_MS`); `DEFAULT_IDEMPOTENCY_TTL_MS` (one day) when absent.
   */
  readonly idempotencyTtlMs?: number;
}
