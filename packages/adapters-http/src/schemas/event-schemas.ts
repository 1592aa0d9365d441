import { Type } from "typebox";
import { PostSchema } from "./post-schemas.js";

/** One change event as a CloudEvent 1.0 in structured mode (docs/change-events.md#the-events). Documentation only. */
export const CloudEventSchema = Type.Object(
  {
    specversion: Type.Literal("1.0"),
    id: Type.String({ pattern: "^[1-9][0-9]*$", description: "The event's number: 1, 2, 3, … with no gap" }),
    source: Type.Literal("/api/v1/posts"),
    type: Type.Union([
      Type.Literal("post.created"),
      Type.Literal("post.updated"),
      Type.Literal("post.deleted"),
    ]),
    subject: Type.String({ pattern: "^[0-9]+$", description: "The post's id" }),
    time: Type.String({ format: "date-time", description: "The change's instant, UTC, with milliseconds" }),
    datacontenttype: Type.Literal("application/json"),
    data: Type.Union([PostSchema, Type.Object({ id: Type.Integer() }, { additionalProperties: false })], {
      description: "The post after the change; {id} only for post.deleted",
    }),
  },
  { additionalProperties: false },
);

/** A JSON page of the change feed. Documentation only. */
export const EventPageSchema = Type.Object(
  {
    events: Type.Array(CloudEventSchema),
    next: Type.Integer({
      minimum: 0,
      description: "The last number listed, or `after` when none: the next page's after",
    }),
  },
  { additionalProperties: false },
);

/** Query string of the change feed. Documentation only: the route checks it. */
export const EventFeedQuerySchema = Type.Object({
  after: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: "Start after this event number (default 0; the stream: the current end)",
    }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: "JSON page size" }),
  ),
});

/** Request headers of the change feed. Documentation only. */
export const EventFeedHeadersSchema = Type.Object({
  Accept: Type.Optional(
    Type.String({ description: "text/event-stream for Server-Sent Events; else a JSON page" }),
  ),
  "Last-Event-ID": Type.Optional(
    Type.String({ description: "The stream resumes after this event number (takes precedence over after)" }),
  ),
});
