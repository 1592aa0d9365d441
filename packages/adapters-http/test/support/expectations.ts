import { STATUS_CODES } from "node:http";
import type { FieldError } from "@posts/domain";
import type { LightMyRequestResponse } from "fastify";
import { expect } from "vitest";

/** The contract's timestamp pattern. */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}$/;
export const JSON_UTF8 = "application/json; charset=utf-8";
export const TEXT_UTF8 = "text/plain; charset=utf-8";

/** The properties of a post on the wire, in the order the contract lists them. */
export const POST_PROPERTIES = ["id", "title", "content", "createdAt", "updatedAt", "user"];

/**
 * Asserts the generic error envelope: status, JSON content type, and exactly the contract's
 * properties: with `errors` when given, else with a `message` and no `errors`.
 */
export function expectEnvelope(
  response: LightMyRequestResponse,
  status: number,
  path: string,
  errors?: readonly FieldError[],
): void {
  expect({ status: response.statusCode, type: response.headers["content-type"] }).toEqual({
    status,
    type: JSON_UTF8,
  });
  expect(response.json()).toStrictEqual({
    timestamp: expect.stringMatching(TIMESTAMP),
    status,
    error: STATUS_CODES[status],
    path,
    ...(errors === undefined ? { message: expect.any(String) } : { errors }),
  });
}

/** Asserts a 401 (or `status`) whose body is exactly one property, `error`, a string. */
export function expectErrorJson(response: LightMyRequestResponse, status = 401): void {
  expect({ status: response.statusCode, type: response.headers["content-type"] }).toEqual({
    status,
    type: JSON_UTF8,
  });
  expect(response.json()).toStrictEqual({ error: expect.any(String) });
}

/** Asserts a plain UTF-8 text answer. */
export function expectText(response: LightMyRequestResponse, status: number, text: string): void {
  expect({
    status: response.statusCode,
    type: response.headers["content-type"],
    body: response.body,
  }).toEqual({
    status,
    type: TEXT_UTF8,
    body: text,
  });
}
