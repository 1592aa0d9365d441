import { Type } from "typebox";
import { ErrorEnvelopeSchema, ErrorJsonSchema } from "./error-schemas.js";

/** One documented response of a route, as @fastify/swagger reads it. */
export type ResponseSchema = object;

/**
 * Marks a response that has, besides the body its `content` describes, a form with no body at
 * all (no Content-Type, Content-Length 0). OpenAPI has no word for "this body or none"; the
 * description says it to people, this extension to tools (the document's own tests read it).
 */
export const EMPTY_BODY_TOO = { "x-empty-body": true } as const;

/** The `Retry-After` of a 429 or 503, as OpenAPI documents a response header. */
export const RETRY_AFTER_HEADER = {
  "Retry-After": { type: "integer", minimum: 1, description: "Seconds to wait before trying again" },
} as const;

/** A response carrying the generic error envelope, and `headers` when given. */
export function envelopeResponse(description: string, headers?: object) {
  return {
    description,
    ...(headers === undefined ? {} : { headers }),
    content: { "application/json": { schema: ErrorEnvelopeSchema } },
  };
}

/** A 429 or 503: the envelope with `Retry-After`. */
export function retryLaterResponse(description: string) {
  return envelopeResponse(description, RETRY_AFTER_HEADER);
}

const JSON_BODY_OF = new WeakMap<object, object>();

/**
 * A JSON response whose body is `schema`, with `headers` when given, in the form Fastify
 * compiles the serializer from (the schema at the status itself, which serializes whatever
 * the content type). {@link documentedResponse} turns it into OpenAPI's form.
 */
export function jsonResponse<const S extends object>(description: string, schema: S, headers?: object) {
  const response = { ...schema, description, ...(headers === undefined ? {} : { headers }) };
  JSON_BODY_OF.set(response, schema);
  return response;
}

/**
 * The OpenAPI form of a response made by {@link jsonResponse} (`content` holding its schema),
 * else `undefined`.
 */
export function documentedResponse(response: object): object | undefined {
  const schema = JSON_BODY_OF.get(response);
  if (schema === undefined) return undefined;
  const { description, headers } = response as { description: string; headers?: object };
  return {
    description,
    ...(headers === undefined ? {} : { headers }),
    content: { "application/json": { schema } },
  };
}

/**
 * The 405 of a method that a documented path does not list, with `Allow`. No operation can
 * state it (it belongs to none), so the document names it among its components.
 */
export const METHOD_NOT_ALLOWED_RESPONSE = {
  description: "The path exists, not with this method: the generic error envelope",
  headers: {
    Allow: {
      description: "The methods the path has, comma-separated",
      schema: { type: "string", examples: ["GET, PATCH, DELETE"] },
    },
  },
  content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } },
} as const;

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

/** A response that is one of several bodies by media type: `content` holds each of theirs. */
export function eitherResponse(
  description: string,
  ...bodies: readonly { readonly content: Readonly<Record<string, unknown>> }[]
) {
  return { description, content: Object.assign({}, ...bodies.map((body) => body.content)) };
}

/** The 401 of a route that needs no token: any path answers an invalid one so. */
export const INVALID_TOKEN = errorJsonResponse("X-AUTH-TOKEN present but invalid or expired");

/** The 401 of a route that needs a user: an invalid token, or one whose user is gone. */
export const INVALID_TOKEN_OR_USER_GONE = errorJsonResponse(
  "Invalid token, or the token's user no longer exists",
);

/** The body limit (413) and media type (415) refusals of a route that reads a JSON body. */
export const BODY_REFUSALS = {
  413: envelopeResponse("Body over the limit"),
  415: envelopeResponse("Body not JSON"),
} as const;

const SERVER_FAILURES = {
  500: envelopeResponse("Unexpected failure; carries no internal detail"),
  503: retryLaterResponse(
    "Database unavailable, the instance shutting down, or no room for a large body or post within the wait; see Retry-After",
  ),
} as const;

/**
 * The responses of one route of the API: the statuses it states, each once and 401 always among
 * them (any path answers an invalid token with 401, each route says in its own words), plus the
 * 500 and 503 every such route can give. A route cannot state 500 or 503 itself, so nothing here
 * replaces what a route stated.
 */
export function routeResponses<
  const Stated extends { readonly 401: ResponseSchema } & Readonly<Record<number, ResponseSchema>> & {
      readonly 500?: never;
      readonly 503?: never;
    },
>(stated: Stated): Stated & typeof SERVER_FAILURES {
  return { ...stated, ...SERVER_FAILURES };
}
