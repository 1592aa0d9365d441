import { Type } from "typebox";

/** The wire pattern of every timestamp (CONTRACT §1). */
export const TIMESTAMP_PATTERN = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}$";

/** A local date-time in the service's time zone, always with milliseconds. */
export const TimestampSchema = Type.String({
  pattern: TIMESTAMP_PATTERN,
  description: "Local date-time in the service's time zone (APP_TIME_ZONE), yyyy-MM-ddTHH:mm:ss.SSS",
  examples: ["2026-11-22T10:15:30.123"],
});

/** One failing input field. */
export const FieldErrorSchema = Type.Object(
  { field: Type.String(), message: Type.String() },
  { additionalProperties: false },
);

/** The generic error envelope (CONTRACT §5). Every property declared, since the serializer drops the rest. */
export const ErrorEnvelopeSchema = Type.Object(
  {
    timestamp: TimestampSchema,
    status: Type.Integer({ examples: [400] }),
    error: Type.String({ description: "HTTP reason phrase", examples: ["Bad Request"] }),
    path: Type.String({ description: "Request path without the query string", examples: ["/api/v1/posts"] }),
    message: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Array(FieldErrorSchema, { description: "Every failing field" })),
  },
  { additionalProperties: false },
);

/** `{"error": "..."}`: invalid token, wrong credentials, or a token whose user is gone. */
export const ErrorJsonSchema = Type.Object({ error: Type.String() }, { additionalProperties: false });

/** A response carrying the generic error envelope. */
export function envelopeResponse(description: string) {
  return { description, content: { "application/json": { schema: ErrorEnvelopeSchema } } };
}

/** A response carrying `{"error": "..."}`. */
export function errorJsonResponse(description: string) {
  return { description, content: { "application/json": { schema: ErrorJsonSchema } } };
}

/** A response with a plain UTF-8 text message. */
export function textResponse(description: string) {
  return { description, content: { "text/plain": { schema: Type.String() } } };
}

/** A response without a body. */
export function emptyResponse(description: string) {
  return { description, type: "null" } as const;
}

/** Responses every route can give: 401 for an invalid token (on any path), 500 and 503. */
export const COMMON_RESPONSES = {
  401: errorJsonResponse("X-AUTH-TOKEN present but invalid or expired"),
  500: envelopeResponse("Unexpected failure; carries no internal detail"),
  503: envelopeResponse("Database unavailable; see Retry-After"),
};
