import type { FastifyJWTOptions } from "@fastify/jwt";
import { type Principal, parseId } from "@posts/domain";

/** What {@link TokenVerifier} concludes about one `X-AUTH-TOKEN` value. */
export type TokenVerdict =
  | { readonly valid: true; readonly principal: Principal }
  | { readonly valid: false; readonly expired: boolean };

/** Checks a token as CONTRACT §4 says; never throws for anything a client can send. */
export type TokenVerifier = (token: string) => TokenVerdict;

/**
 * The options @fastify/jwt hands to fast-jwt's verifier (TOOLCHAIN gotcha 3): HS256 only, so
 * `none` and every other algorithm are refused; `iss` must equal `issuer`; no clock
 * tolerance; the claims our principal needs are required. fast-jwt caches each verdict by a
 * hash of the token until `exp` at the latest, so a client that sends the same token on every
 * request costs one hash, not one HMAC and two JSON parses.
 */
export function verifyOptions(issuer: string): NonNullable<FastifyJWTOptions["verify"]> {
  return {
    algorithms: ["HS256"],
    allowedIss: issuer,
    clockTolerance: 0,
    requiredClaims: ["iss", "exp", "sub", "email", "roles"],
    cache: 10_000,
  };
}

/** fast-jwt's code for a token whose `exp` has passed; every other failure is plainly invalid. */
const EXPIRED_CODE = "FAST_JWT_EXPIRED";

const POSITIVE_INTEGER = /^[1-9][0-9]*$/;
const INVALID: TokenVerdict = { valid: false, expired: false };
const EXPIRED: TokenVerdict = { valid: false, expired: true };

/**
 * Turns a JWT verification (`decode`, which throws for a bad token; @fastify/jwt's
 * `app.jwt.verify` configured with {@link verifyOptions}) into the contract's verdict. A token
 * is valid only when all of these hold: three base64url parts of JSON, `alg` HS256, the HMAC
 * signature matches the key, `iss` equals the issuer, `exp` present and not passed, `nbf` (if
 * any) reached, `sub` a positive integer as text that fits an id, `email` a string, and `roles`
 * a non-empty array of `{authority: string}`; the principal carries the first authority. The
 * database is never consulted.
 */
export function tokenVerifier(decode: (token: string) => unknown): TokenVerifier {
  return (token) => {
    let payload: unknown;
    try {
      payload = decode(token);
    } catch (error) {
      return (error as { code?: unknown } | null)?.code === EXPIRED_CODE ? EXPIRED : INVALID;
    }
    const principal = principalOf(payload);
    return principal === undefined ? INVALID : { valid: true, principal };
  };
}

// fast-jwt checked the signature, algorithm, issuer and dates; the shape of our own claims is ours to check.
function principalOf(payload: unknown): Principal | undefined {
  if (!isRecord(payload)) return undefined;
  const { sub, email, roles } = payload;
  if (typeof sub !== "string" || !POSITIVE_INTEGER.test(sub) || typeof email !== "string") return undefined;
  const userId = parseId(sub);
  if (userId === undefined || !Array.isArray(roles) || roles.length === 0) return undefined;
  if (!roles.every((role) => isRecord(role) && typeof role.authority === "string")) return undefined;
  return { userId, email, authority: (roles[0] as { authority: string }).authority };
}

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
