import type { Clock } from "../ports/clock.js";
import type { PasswordHasher } from "../ports/password-hasher.js";
import type { PostRepository } from "../ports/post-repository.js";
import type { TokenIssuer } from "../ports/token-issuer.js";
import type { UserRepository } from "../ports/user-repository.js";

/** Every port a use case may need; each use case takes only the slice it uses. */
export interface Dependencies {
  readonly posts: PostRepository;
  readonly users: UserRepository;
  readonly clock: Clock;
  readonly hasher: PasswordHasher;
  readonly tokens: TokenIssuer;
}
