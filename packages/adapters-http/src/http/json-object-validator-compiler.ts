import type { FastifySchemaCompiler } from "fastify";
import { HTTP_MESSAGES } from "../errors/http-messages.js";

/**
 * The app's validator compiler. Route schemas describe the real types for OpenAPI and the
 * serializer, but validating request data is the domain's job: it lists every failing field
 * with the contract's messages, which a schema validator that stops at (or coerces) the
 * first wrong type could not do. So the only check made here is the one the domain cannot
 * make: a body must be a JSON object (not `null`, an array, a string or a number, and not
 * missing). Query strings and path parameters pass through as the text they arrived as.
 */
export const jsonObjectValidatorCompiler: FastifySchemaCompiler<unknown> = ({ httpPart }) =>
  httpPart === "body" ? requireJsonObject : acceptAnything;

function requireJsonObject(data: unknown): true | { error: Error } {
  // Fastify passes `null` for a missing body.
  if (typeof data === "object" && data !== null && !Array.isArray(data)) return true;
  return { error: new Error(HTTP_MESSAGES.bodyNotObject) };
}

function acceptAnything(): true {
  return true;
}

/** The body of a request whose route declared a body schema: a JSON object, as checked above. */
export function jsonObjectBody(body: unknown): Readonly<Record<string, unknown>> {
  return body as Readonly<Record<string, unknown>>;
}
