import { Type } from "typebox";
import { ErrorEnvelopeSchema, ErrorJsonSchema } from "./error-schemas.js";

/** One documented response of a route, as @fastify/swagger reads it. */
export type ResponseSchema = object;

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
  503: envelopeResponse("Database unavailable; see Retry-After"),
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
