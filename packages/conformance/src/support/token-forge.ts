import { randomBytes } from "node:crypto";
import { calculateJwkThumbprint, SignJWT } from "jose";

/** The claims of a token, as the service issues them or deliberately otherwise. */
export type Claims = Record<string, unknown>;

/** Algorithms the forge signs with: the service's HS256, and one it must refuse. */
export type HmacAlgorithm = "HS256" | "HS512";

/**
 * Makes JWTs with an HMAC key (jose, not hand-rolled crypto): with the deployment's
 * `JWT_SECRET` to build tokens that are well signed but wrong in one claim, or with a random key
 * for tokens of the right shape whose signature cannot match.
 */
export class TokenForge {
  readonly #key: Uint8Array;
  readonly #issuer: string;

  /** `secret` is the text of the deployment's JWT_SECRET; its UTF-8 bytes are the key. */
  constructor(secret: string | Uint8Array, issuer: string) {
    this.#key = typeof secret === "string" ? new TextEncoder().encode(secret) : secret;
    this.#issuer = issuer;
  }

  /** A forge whose key is 32 random bytes: what it signs no deployment accepts. */
  static withRandomKey(issuer: string): TokenForge {
    return new TokenForge(new Uint8Array(randomBytes(32)), issuer);
  }

  /** The claims the service itself puts in a token for `user` (docs/authentication.md#what-the-token-holds), valid for the next hour. */
  claimsFor(user: { readonly id: number; readonly email: string }): Claims {
    const now = Math.floor(Date.now() / 1000);
    return {
      iss: this.#issuer,
      iat: now,
      exp: now + 3600,
      sub: String(user.id),
      email: user.email,
      roles: [{ authority: "ROLE_USER" }],
    };
  }

  /**
   * A well-signed token of `user` whose one role is ROLE_GUEST: authenticated, but without the
   * ROLE_USER that every write asks for (docs/authentication.md#roles).
   */
  guestTokenFor(user: { readonly id: number; readonly email: string }): Promise<string> {
    return this.sign({ ...this.claimsFor(user), roles: [{ authority: "ROLE_GUEST" }] });
  }

  /**
   * Signs `claims` exactly as given (nothing added) with the header `{alg, typ: "JWT"}`, and
   * `kid` when one is given.
   */
  sign(claims: Claims, algorithm: HmacAlgorithm = "HS256", kid?: string): Promise<string> {
    return new SignJWT(claims)
      .setProtectedHeader({ alg: algorithm, typ: "JWT", ...(kid === undefined ? {} : { kid }) })
      .sign(this.#key);
  }

  /** The `kid` the service gives this key (docs/authentication.md): its RFC 7638 JWK thumbprint. */
  keyId(): Promise<string> {
    return calculateJwkThumbprint({ kty: "oct", k: Buffer.from(this.#key).toString("base64url") }, "sha256");
  }
}

/**
 * Joins a JWT by hand from a header, a payload and a signature part, for tokens no library
 * would make (alg `none`). Only base64url encoding happens here, no cryptography.
 */
export function handMadeToken(header: unknown, payload: unknown, signature = ""): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${part(header)}.${part(payload)}.${signature}`;
}

/** The payload of a JWT, decoded without any verification (what a client can read of its token). */
export function decodePayload(token: string): unknown {
  const payload = token.split(".")[1];
  return payload === undefined ? undefined : JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
}

/** The header of a JWT, decoded without any verification. */
export function decodeHeader(token: string): unknown {
  const header = token.split(".")[0];
  return header === undefined ? undefined : JSON.parse(Buffer.from(header, "base64url").toString("utf8"));
}

/** A value of `X-AUTH-TOKEN` that no deployment can accept: not three base64url parts. */
export const INVALID_TOKEN = "not-a-jwt";
