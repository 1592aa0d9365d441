import { EventFeedHeadersSchema, EventFeedQuerySchema, EventPageSchema } from "./event-schemas.js";
import { envelopeResponse, INVALID_TOKEN, retryLaterResponse, routeResponses } from "./responses.js";
import { PUBLIC } from "./security.js";

/** GET /api/v1/posts/events: the change feed, as JSON pages or Server-Sent Events (docs/change-events.md). */
export const ChangeFeedRouteSchema = {
  summary: "Follow every change of posts, in order: Server-Sent Events or JSON pages",
  description:
    "Each change is one event, numbered 1, 2, 3, … for the whole service with no gap. With " +
    "Accept naming text/event-stream with a q above 0 and no lower than application/json's, a stream of `id`/`event`/`data` messages (data: the CloudEvent on " +
    "one line) from after Last-Event-ID or ?after= (else from now on), a comment line at least " +
    'every 15 s, and `event: reset` with data {"oldest": n} first when resuming before the oldest ' +
    "event kept. Otherwise one JSON page after ?after= (default 0) of at most ?limit= events, " +
    "stopping after its first event once it holds 1 MiB of events (next continues it).",
  tags: ["events"],
  operationId: "listChangeEvents",
  security: PUBLIC,
  querystring: EventFeedQuerySchema,
  headers: EventFeedHeadersSchema,
  response: routeResponses({
    200: {
      description: "A JSON page, or (Accept: text/event-stream) the stream",
      headers: {
        "Cache-Control": {
          type: "string",
          enum: ["no-cache"],
          description: "The feed grows: a cache revalidates every time",
        },
        "X-Accel-Buffering": {
          type: "string",
          enum: ["no"],
          description: "The stream only: a buffering proxy (nginx) passes each message on at once",
        },
      },
      content: {
        "application/json": { schema: EventPageSchema },
        "text/event-stream": {
          schema: {
            type: "string",
            examples: [
              'id: 42\nevent: post.updated\ndata: {"specversion":"1.0","id":"42","source":"/api/v1/posts",…}\n\n',
            ],
          },
        },
      },
    },
    400: envelopeResponse("after, limit or Last-Event-ID not a non-negative integer in range"),
    410: envelopeResponse('JSON page after events no longer kept: "Gone", with the oldest kept in message'),
    429: retryLaterResponse(
      "A stream past the cap of open streams, in all or from this address; see Retry-After",
    ),
    401: INVALID_TOKEN,
  }),
} as const;
