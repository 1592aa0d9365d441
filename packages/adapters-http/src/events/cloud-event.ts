import type { PostChangeEvent } from "@posts/domain";
import { type TimestampFormatter, timestampFormatter } from "../http/timestamp-formatter.js";
import { postJson } from "../routes/post-serializer.js";

/** Turns a change event into its CloudEvent, as JSON text on one line. */
export type CloudEventRenderer = (event: PostChangeEvent) => string;

/** The CloudEvents `source` of every change event: the collection the posts live in. */
export const CLOUD_EVENT_SOURCE = "/api/v1/posts";

/**
 * The renderer of change events as CloudEvents 1.0 in structured mode (JSON), the one form
 * the feed and any relay publish: `{"specversion":"1.0","id":"42","source":"/api/v1/posts",
 * "type":"post.updated","subject":"12","time":"2026-11-22T10:15:30.123Z",
 * "datacontenttype":"application/json","data":{…}}`, properties in that order. `id` is the
 * event's number as a decimal string, `subject` the post's id, `time` the change's instant in
 * UTC with milliseconds, `data` the post after the change exactly as GET /api/v1/posts/<id>
 * writes it (timestamps in `timeZone`, default UTC), or `{"id":12}` for a deletion. The text
 * has no line break, so it fits one SSE `data:` line. Throws a `RangeError` for an unknown zone.
 */
export function cloudEventRenderer(timeZone = "UTC"): CloudEventRenderer {
  return rendererFor(timestampFormatter(timeZone));
}

/**
 * The CloudEvent of `event` without its post: the same attributes, `data` `{"id":12}` as for a
 * deletion, and the `dataref` extension naming where the whole event is kept, the feed's JSON page
 * that holds it alone (`/api/v1/posts/events?after=41&limit=1` for event 42). For a carrier that
 * takes no message as large as the post (a NATS server's `max_payload`, 1 MB by default, against
 * posts of up to the body limit): the consumer reads the whole event there, while the feed
 * keeps it (its retention).
 */
export function cloudEventReference(event: PostChangeEvent): string {
  return (
    `{"specversion":"1.0","id":"${event.number}","source":"${CLOUD_EVENT_SOURCE}",` +
    `"type":"${event.type}","subject":"${event.postId}","time":"${event.occurredAt.toISOString()}",` +
    `"datacontenttype":"application/json","dataref":"${CLOUD_EVENT_SOURCE}/events?after=${event.number - 1}&limit=1",` +
    `"data":{"id":${event.postId}}}`
  );
}

/** {@link cloudEventRenderer} for a formatter the caller already has. */
export function rendererFor(format: TimestampFormatter): CloudEventRenderer {
  return (event) => {
    const data = event.type === "post.deleted" ? `{"id":${event.postId}}` : postJson(event.post, format);
    return (
      `{"specversion":"1.0","id":"${event.number}","source":"${CLOUD_EVENT_SOURCE}",` +
      `"type":"${event.type}","subject":"${event.postId}","time":"${event.occurredAt.toISOString()}",` +
      `"datacontenttype":"application/json","data":${data}}`
    );
  };
}
