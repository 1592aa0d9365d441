import { createHmac } from "node:crypto";

/** What the harness and the baseline need to sign and check tokens the way the service does. */
export interface TokenSettings {
  readonly secret: string;
  readonly issuer: string;
  readonly ttlMs: number;
}

const base64urlJson = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** The HMAC-SHA256 of `data` under `secret`. */
export function hmac(secret: string, data: string): Buffer {
  return createHmac("sha256", secret).update(data).digest();
}

/**
 * An HS256 JWT with the claims the service issues at login
 * (docs/authentication.md#what-the-token-holds): iss, iat, exp (seconds), sub = user id as text,
 * email, roles = [{authority: "ROLE_USER"}].
 */
export function signToken(
  settings: TokenSettings,
  user: { readonly id: number; readonly email: string },
): string {
  const iat = Math.floor(Date.now() / 1000);
  const unsigned = `${base64urlJson({ alg: "HS256", typ: "JWT" })}.${base64urlJson({
    iss: settings.issuer,
    iat,
    exp: iat + Math.floor(settings.ttlMs / 1000),
    sub: String(user.id),
    email: user.email,
    roles: [{ authority: "ROLE_USER" }],
  })}`;
  return `${unsigned}.${hmac(settings.secret, unsigned).toString("base64url")}`;
}
