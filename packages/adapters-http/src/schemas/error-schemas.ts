import { Type } from "typebox";
import { TimestampSchema } from "./common-schemas.js";

/** One failing input field. */
export const FieldErrorSchema = Type.Object(
  { field: Type.String(), message: Type.String() },
  { additionalProperties: false },
);

/** The generic error envelope (docs/errors.md#the-envelope). Every property declared, since the serializer drops the rest. */
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
