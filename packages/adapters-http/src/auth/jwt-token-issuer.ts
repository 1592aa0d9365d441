import {
  DEFAULT_TOKEN_LIFETIME_MS,
  type IssuedToken,
  type TokenClaims,
  type TokenIssuer,
} from "@posts/domain";
// fast-jwt is the engine of @fastify/jwt; the issuer signs outside any Fastify instance, so it uses it directly.
import { createSigner } from "fast-jwt";
import { assertSecretLength } from "./jwt-secret.js";

/** Options of {@link JwtTokenIssuer}. */
export interface JwtTokenIssuerOptions {
  /** HS256 key, at least 32 bytes. */
  readonly secret: string;
  /** The `iss` claim; verification accepts only this value. */
  readonly issuer: string;
  /** Token lifetime in milliseconds. Default 86 400 000 (one day). */
  readonly ttlMs?: number;
  /** Current time in epoch milliseconds; for tests. Default `Date.now`. */
  readonly now?: () => number;
}

/**
 * Signs HS256 JWTs with the claims docs/authentication.md#what-the-token-holds lists: `iss`, `iat`, `exp` = `iat` + ttl,
 * `sub` = user id as text, `email`, and `roles` = `[{"authority": role}]`. The
 * header is `{"alg":"HS256","typ":"JWT"}`.
 */
export class JwtTokenIssuer implements TokenIssuer {
  readonly #sign: (payload: Record<string, unknown>) => string;
  readonly #issuer: string;
  readonly #ttlMs: number;
  readonly #now: () => number;

  /** Throws a RangeError for a secret under 32 bytes or a ttl under one second. */
  constructor(options: JwtTokenIssuerOptions) {
    assertSecretLength(options.secret);
    const ttlMs = options.ttlMs ?? DEFAULT_TOKEN_LIFETIME_MS;
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1000) {
      throw new RangeError("the token lifetime must be at least 1000 ms");
    }
    // iat and exp are computed here, from one reading of the clock, so that exp = iat + ttl exactly.
    this.#sign = createSigner({ key: options.secret, algorithm: "HS256" });
    this.#issuer = options.issuer;
    this.#ttlMs = ttlMs;
    this.#now = options.now ?? Date.now;
  }

  /** Signs a token for `claims`, valid from now for the configured lifetime. */
  async issue(claims: TokenClaims): Promise<IssuedToken> {
    const iat = Math.floor(this.#now() / 1000);
    const token = this.#sign({
      iss: this.#issuer,
      iat,
      // JWT times are whole seconds: a ttl that is not one is rounded down.
      exp: iat + Math.floor(this.#ttlMs / 1000),
      sub: claims.subject,
      email: claims.email,
      roles: claims.roles.map((authority) => ({ authority })),
    });
    return { token, expiresInMs: this.#ttlMs };
  }
}
