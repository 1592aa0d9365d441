import { Type } from "typebox";

/** The wire pattern of every timestamp (docs/posts.md#a-post-on-the-wire). */
export const TIMESTAMP_PATTERN = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}$";

/** A local date-time in the service's time zone, always with milliseconds. */
export const TimestampSchema = Type.String({
  pattern: TIMESTAMP_PATTERN,
  description: "Local date-time in the service's time zone (APP_TIME_ZONE), yyyy-MM-ddTHH:mm:ss.SSS",
  examples: ["2026-11-22T10:15:30.123"],
});

/**
 * What a `:id` path segment must be for a route to look it up: ASCII digits only. The 403 guard
 * of PATCH/DELETE and the 404 of GET both test this one pattern.
 */
export const ID_PATTERN = "^[0-9]+$";

/** Whether a raw `:id` path segment matches {@link ID_PATTERN}. */
export function isDigitId(id: string): boolean {
  return ID.test(id);
}

const ID = new RegExp(ID_PATTERN);
