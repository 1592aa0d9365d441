import { ROLE_USER } from "../principal.js";

/** How long a token is valid by default: one day, as the specification states. */
export const DEFAULT_TOKEN_LIFETIME_MS = 86_400_000;

/** What a token says about its holder. */
export interface TokenClaims {
  /** The user id, as text. */
  readonly subject: string;
  readonly email: string;
  /** Always `[ROLE_USER]` for a registered user. */
  readonly roles: readonly string[];
}

/** A signed token and how long it stays valid. */
export interface IssuedToken {
  readonly token: string;
  /** Lifetime in milliseconds from issue; {@link DEFAULT_TOKEN_LIFETIME_MS} unless configured. */
  readonly expiresInMs: number;
}

/** Signs tokens; how (algorithm, key, issuer) is the adapter's business. */
export interface TokenIssuer {
  /** Signs a token carrying `claims`, valid from now for the issuer's configured lifetime. */
  issue(claims: TokenClaims): Promise<IssuedToken>;
}

/** The claims of the token a user gets at login. */
export function claimsFor(user: { readonly id: number; readonly email: string }): TokenClaims {
  return { subject: String(user.id), email: user.email, roles: [ROLE_USER] };
}
