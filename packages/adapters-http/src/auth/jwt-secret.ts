/** Shortest HS256 key accepted, in bytes: the hash's output size, as RFC 7518 §3.2 requires. */
export const MIN_SECRET_BYTES = 32;

/** Throws a RangeError when `secret` is shorter than {@link MIN_SECRET_BYTES} bytes of UTF-8. */
export function assertSecretLength(secret: string): void {
  if (Buffer.byteLength(secret, "utf8") < MIN_SECRET_BYTES) {
    throw new RangeError(`the JWT secret must be at least ${MIN_SECRET_BYTES} bytes`);
  }
}
