import { type Principal, parseId } from "@posts/domain";
import { createVerifier, type VerifierOptions } from "fast-jwt";

/** What {@link TokenVerifier} concludes about one `X-AUTH-TOKEN` value. */
export type TokenVerdict =
  | { readonly valid: true; readonly principal: Principal }
  | { readonly valid: false; readonly expired: boolean };

/** Checks a token as docs/authentication.md#invalid-tokens-401-on-every-path says; never throws for anything a client can send. */
export type TokenVerifier = (token: string) => TokenVerdict;

/**
 * The options of fast-jwt's verifier (the engine of @fastify/jwt, whose gotchas TOOLCHAIN.md
 * lists): HS256 only, so `none` and every other algorithm are refused; `iss` must equal
 * `issuer`; no clock tolerance; the claims our principal needs are required. fast-jwt caches
 * each verdict by a hash of the token until `exp` at the latest, so a client that sends the same
 * token on every request costs one hash, not one HMAC and two JSON parses.
 */
export function verifyOptions(issuer: string): Partial<VerifierOptions> {
  return {
    algorithms: ["HS256"],
    allowedIss: issuer,
    clockTolerance: 0,
    requiredClaims: ["iss", "exp", "sub", "email", "roles"],
    cache: 10_000,
  };
}

/**
 * A JWT decoder that accepts a token signed with any of `keys` (the current signing key first,
 * then the keys of a rotation in progress), under the same {@link verifyOptions} for each: it
 * answers the payload, or throws fast-jwt's error. Only a signature mismatch moves on to the next
 * key; anything else (malformed, another algorithm, expired, wrong issuer) is the token's fault
 * whatever the key, and is thrown at once. A signature made with none of the keys throws the
 * mismatch. One fast-jwt verifier per key, because neither fast-jwt nor @fastify/jwt tries
 * several keys: a key function there picks one key per token and makes verification async.
 * Throws a RangeError for an empty `keys`.
 */
export function keyRingDecoder(keys: readonly string[], issuer: string): (token: string) => unknown {
  if (keys.length === 0) throw new RangeError("at least one verification key is needed");
  const options = verifyOptions(issuer);
  const verifiers = [...new Set(keys)].map((key) => createVerifier({ ...options, key }));
  return (token) => {
    let mismatch: unknown;
    for (const verify of verifiers) {
      try {
        return verify(token);
      } catch (error) {
        if ((error as { code?: unknown } | null)?.code !== SIGNATURE_MISMATCH) throw error;
        mismatch = error;
      }
    }
    throw mismatch;
  };
}

/** fast-jwt's code for a signature that the key did not make. */
const SIGNATURE_MISMATCH = "FAST_JWT_INVALID_SIGNATURE";

/** fast-jwt's code for a token whose `exp` has passed; every other failure is plainly invalid. */
const EXPIRED_CODE = "FAST_JWT_EXPIRED";

const POSITIVE_INTEGER = /^[1-9][0-9]*$/;
const INVALID: TokenVerdict = { valid: false, expired: false };
const EXPIRED: TokenVerdict = { valid: false, expired: true };

/**
 * Turns a JWT verification (`decode`, which throws for a bad token; {@link keyRingDecoder})
 * into the contract's verdict. A token is valid only when all of these hold: three base64url
 * parts of JSON, `alg` HS256, the HMAC signature made with one of the keys, `iss` equals the
 * issuer, `exp` present and not passed, `nbf` (if any) reached, `sub` a positive integer as text
 * that fits an id, `email` a string, and `roles` a non-empty array of `{authority: string}`; the
 * principal carries the first authority. The database is never consulted.
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
