import { createHmac } from "node:crypto";

/** The secret and issuer every test app verifies with. */
export const TEST_SECRET = "test-secret-that-is-at-least-32-bytes-long!";
export const TEST_ISSUER = "posts-service";

const base64url = (value: string | Buffer) => Buffer.from(value).toString("base64url");

/** Signs `header.payload` with HMAC-SHA256 (or `hash`) the way a JWT library would, independently of the app. */
export function signJwt(
  payload: Record<string, unknown>,
  options: { header?: Record<string, unknown>; secret?: string; hash?: "sha256" | "sha512" } = {},
): string {
  const header = options.header ?? { alg: "HS256", typ: "JWT" };
  const input = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`;
  const signature = createHmac(options.hash ?? "sha256", options.secret ?? TEST_SECRET)
    .update(input)
    .digest("base64url");
  return `${input}.${signature}`;
}

/** The claims of a valid token for `user`, as the contract lists them, valid for an hour from now. */
export function claimsFor(
  user: { readonly id: number; readonly email: string },
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const iat = Math.floor(Date.now() / 1000);
  return {
    iss: TEST_ISSUER,
    iat,
    exp: iat + 3600,
    sub: String(user.id),
    email: user.email,
    roles: [{ authority: "ROLE_USER" }],
    ...overrides,
  };
}

/** A valid token for `user`, minted without the app. */
export function tokenFor(
  user: { readonly id: number; readonly email: string },
  overrides: Record<string, unknown> = {},
): string {
  return signJwt(claimsFor(user, overrides));
}
