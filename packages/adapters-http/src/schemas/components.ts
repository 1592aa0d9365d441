import { Type } from "typebox";
import { TimestampSchema } from "./common-schemas.js";
import { ErrorEnvelopeSchema, ErrorJsonSchema, FieldErrorSchema } from "./error-schemas.js";
import { CloudEventSchema, EventPageSchema } from "./event-schemas.js";
import { NewPostBodySchema, PostChangesBodySchema, PostPageSchema, PostSchema } from "./post-schemas.js";
import { documentedResponse } from "./responses.js";
import { CredentialsBodySchema, LoginSchema, UserSchema } from "./user-schemas.js";

/** The body of `GET /health` and of a ready `GET /ready`. */
export const StatusSchema = Type.Object({ status: Type.Literal("ok") }, { additionalProperties: false });

/**
 * The shapes OpenAPI names in `components.schemas`, by name. Generated clients take these names
 * for their types, so they are part of the API: rename none. Each constant is the very object the
 * routes use, which is how the document finds it in a route schema (by identity, see
 * {@link withSchemaRefs}).
 */
export const NAMED_SCHEMAS = {
  Post: PostSchema,
  PostPage: PostPageSchema,
  NewPost: NewPostBodySchema,
  PostChanges: PostChangesBodySchema,
  User: UserSchema,
  Credentials: CredentialsBodySchema,
  Login: LoginSchema,
  ErrorEnvelope: ErrorEnvelopeSchema,
  FieldError: FieldErrorSchema,
  AuthError: ErrorJsonSchema,
  Timestamp: TimestampSchema,
  Status: StatusSchema,
  ChangeEvent: CloudEventSchema,
  ChangeEventPage: EventPageSchema,
} as const;

const NAME_OF = new Map<object, string>(
  Object.entries(NAMED_SCHEMAS).map(([name, schema]) => [schema, name]),
);

/**
 * A copy of `schema` in which every named shape ({@link NAMED_SCHEMAS}) below it, and it itself
 * unless `self` says otherwise, is a `$ref` to that name, as @fastify/swagger resolves it to
 * `#/components/schemas/<name>`. For the document only: routes keep their inline schemas, so the
 * serializers Fastify compiles from them are the same with or without the document.
 */
export function withSchemaRefs(schema: unknown, self: "ref" | "keep" = "ref"): unknown {
  if (Array.isArray(schema)) return schema.map((item) => withSchemaRefs(item));
  if (typeof schema !== "object" || schema === null) return schema;
  const name = NAME_OF.get(schema);
  if (name !== undefined && self === "ref") return { $ref: `${name}#` };
  const response = documentedResponse(schema);
  if (response !== undefined) return withSchemaRefs(response);
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, withSchemaRefs(value)]));
}

/** The shared schemas to add to the app (`app.addSchema`), each with its name as `$id`. */
export function namedSchemaDefinitions(): { readonly $id: string }[] {
  return Object.entries(NAMED_SCHEMAS).map(([name, schema]) => ({
    $id: name,
    ...(withSchemaRefs(schema, "keep") as object),
  }));
}
