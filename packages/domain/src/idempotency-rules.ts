/** How long an idempotency key is remembered when nothing else is configured: one day. */
export const DEFAULT_IDEMPOTENCY_TTL_MS = 86_400_000;

// The IETF draft's key is a structured-field string; visible ASCII keeps it printable and bounded.
const KEY = /^[\x21-\x7e]{1,255}$/;

/** Whether `key` is a usable idempotency key: 1 to 255 visible ASCII characters (0x21–0x7E). */
export function isValidIdempotencyKey(key: string): boolean {
  return KEY.test(key);
}
