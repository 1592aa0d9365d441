/// <reference types="@fastify/jwt" preserve="true" />
import fastifyJwt from "@fastify/jwt";
import {
  DEFAULT_TOKEN_LIFETIME_MS,
  type IssuedToken,
  type TokenClaims,
  type TokenIssuer,
} from "@posts/domain";
import Fastify from "fastify";
import { jwtKeyId } from "./jwt-key-id.js";
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

type Sign = (payload: Readonly<Record<string, unknown>>) => string;

/**
 * Signs HS256 JWTs with the claims docs/authentication.md#what-the-token-holds lists: `iss`, `iat`,
 * `exp` = `iat` + ttl, `sub` = user id as text, `email`, and `roles` = `[{"authority": role}]`. The
 * header is `{"alg":"HS256","typ":"JWT","kid":…}`, `kid` naming the key (`jwtKeyId`), so that every
 * instance holding it, as its current or a previous key, verifies the token with that key alone.
 */
export class JwtTokenIssuer implements TokenIssuer {
  readonly #secret: string;
  #sign: Promise<Sign> | undefined;
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
    this.#secret = options.secret;
    this.#issuer = options.issuer;
    this.#ttlMs = ttlMs;
    this.#now = options.now ?? Date.now;
  }

  /** Signs a token for `claims`, valid from now for the configured lifetime. */
  async issue(claims: TokenClaims): Promise<IssuedToken> {
    this.#sign ??= signerOf(this.#secret);
    const sign = await this.#sign;
    // iat and exp are computed here, from one reading of the clock, so that exp = iat + ttl exactly.
    const iat = Math.floor(this.#now() / 1000);
    const token = sign({
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

/**
 * @fastify/jwt's signer for `secret`, on a Fastify instance of its own that never listens: tokens
 * are issued by the login use case, outside any reply (`reply.jwtSign`).
 */
async function signerOf(secret: string): Promise<Sign> {
  const host = Fastify();
  await host.register(fastifyJwt, { secret, sign: { algorithm: "HS256", kid: jwtKeyId(secret) } });
  const { jwt } = host;
  return (payload) => jwt.sign(payload);
}
