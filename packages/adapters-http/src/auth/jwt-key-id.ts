import { createHash } from "node:crypto";

/**
 * The `kid` naming the HS256 key `secret` (the UTF-8 bytes of the text) in the tokens it signs:
 * its JWK thumbprint (RFC 7638 §3.2, the SHA-256 of `{"k":"<key, base64url>","kty":"oct"}`), in
 * base64url. Every instance holding the key derives the same id, and the id tells no more about
 * the key than any signature made with it does: both only let a guess of the key be checked.
 */
export function jwtKeyId(secret: string): string {
  const k = Buffer.from(secret, "utf8").toString("base64url");
  return createHash("sha256").update(`{"k":"${k}","kty":"oct"}`).digest("base64url");
}
