import { parseId } from "./ids.js";

// The prefix versions the format so that a later encoding can tell old cursors apart.
const PREFIX = "v1.";
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * Makes the opaque cursor that continues a newest-first listing after the post `lastId`.
 * Clients must not parse it; only {@link decodeCursor} gives it meaning.
 */
export function encodeCursor(lastId: number): string {
  return btoa(`${PREFIX}${lastId}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * Reads a cursor made by {@link encodeCursor}. Answers the id the next page starts below,
 * or `undefined` for anything else (a tampered, truncated or foreign string).
 */
export function decodeCursor(cursor: string): number | undefined {
  if (cursor.length === 0 || cursor.length > 64 || !BASE64URL.test(cursor)) return undefined;
  let decoded: string;
  try {
    decoded = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return undefined;
  }
  if (!decoded.startsWith(PREFIX)) return undefined;
  const id = parseId(decoded.slice(PREFIX.length));
  // Re-encoding must give the same text, so that one position has exactly one cursor.
  return id !== undefined && encodeCursor(id) === cursor ? id : undefined;
}
