/// <reference types="@fastify/jwt" preserve="true" />
import fastifyJwt, { type FastifyJWTOptions } from "@fastify/jwt";
import { type Principal, parseId } from "@posts/domain";
import type { FastifyInstance } from "fastify";
import type { JwtKeyRing } from "./jwt-key-ring.js";

/** What {@link TokenVerifier} concludes about one `X-AUTH-TOKEN` value. */
export type TokenVerdict =
  | { readonly valid: true; readonly principal: Principal }
  | { readonly valid: false; readonly expired: boolean };

/** Checks a token as docs/authentication.md#invalid-tokens-401-on-every-path says; never throws for anything a client can send. */
export type TokenVerifier = (token: string) => TokenVerdict;

/**
 * The options @fastify/jwt hands to fast-jwt's verifier: HS256 only, so `none` and every other
 * algorithm are refused; `iss` must equal `issuer`; no clock tolerance; the claims our principal
 * needs are required. fast-jwt caches each verdict by a hash of the token until `exp` at the
 * latest, so a client that sends the same token on every request costs one hash, not one HMAC
 * and two JSON parses.
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

/** fast-jwt's code, as `app.jwt.verify` throws it, for a token whose `exp` has passed. */
const EXPIRED_CODE = "FAST_JWT_EXPIRED";

const POSITIVE_INTEGER = /^[1-9][0-9]*$/;
const INVALID: TokenVerdict = { valid: false, expired: false };
const EXPIRED: TokenVerdict = { valid: false, expired: true };

/**
 * Registers on `app` one @fastify/jwt per key of `keys`, each in a context of its own with
 * {@link verifyOptions}, and answers the verifier of `X-AUTH-TOKEN` over them: each token is
 * verified with the one key `keys` chooses for it (the key its `kid` names, or without a `kid`
 * the current or a previous key), and a `kid` that names no key held is invalid.
 *
 * A token is valid only when all of these hold: three base64url parts of JSON, `alg` HS256, the
 * HMAC signature made with that key, `iss` equals `issuer`, `exp` present and not passed, `nbf`
 * (if any) reached, `sub` a positive integer as text that fits an id, `email` a string, and
 * `roles` a non-empty array of `{authority: string}`; the principal carries the first authority.
 * The database is never consulted.
 *
 * Why not one @fastify/jwt whose `secret` function picks the key: that function serves only
 * `request.jwtVerify()`, which decodes every token (two base64 and two JSON parses) before
 * fast-jwt's cache is asked, and merges its options anew, on every request; a static key's
 * `app.jwt.verify` asks the cache first, reusing one fast-jwt verifier, as before keys rotated.
 */
export async function tokenVerifier(
  app: FastifyInstance,
  keys: JwtKeyRing,
  issuer: string,
): Promise<TokenVerifier> {
  const options = verifyOptions(issuer);
  const verifiers = new Map<string, (token: string) => unknown>();
  for (const secret of keys.secrets) {
    // Encapsulated: each context's `jwt` decorator is its own, and none reaches the routes.
    await app.register(async (context) => {
      await context.register(fastifyJwt, { secret, verify: options });
      const { jwt } = context;
      verifiers.set(secret, (token) => jwt.verify(token));
    });
  }
  return (token) => {
    const key = keys.keyFor(token);
    const verify = key === undefined ? undefined : verifiers.get(key);
    if (verify === undefined) return INVALID;
    let payload: unknown;
    try {
      payload = verify(token);
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
