import {
  DEFAULT_TOKEN_LIFETIME_MS,
  type IssuedToken,
  type TokenClaims,
  type TokenIssuer,
} from "../ports/token-issuer.js";

/** Issues readable unsigned tokens and remembers the claims, for tests of the login use case. */
export class FakeTokenIssuer implements TokenIssuer {
  /** Every set of claims issued, oldest first. */
  readonly issued: TokenClaims[] = [];

  /** A token that is the claims as JSON; never accepted by a real verifier. */
  async issue(claims: TokenClaims): Promise<IssuedToken> {
    this.issued.push(claims);
    return { token: `fake.${JSON.stringify(claims)}`, expiresInMs: DEFAULT_TOKEN_LIFETIME_MS };
  }
}
