import { parse } from "content-type";
import type { FastifyPluginCallback, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { SendEnvelope } from "../errors/error-envelope.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";
import { addBodyPreParsing } from "./body-routes.js";

// What the JSON parser decodes: UTF-8 (RFC 8259 §8.1), under either of its labels.
const UTF8_CHARSETS = new Set(["utf-8", "utf8"]);

/** Whether the request announces a body: a length above zero, or chunks. */
function declaresBody(request: FastifyRequest): boolean {
  const length = request.headers["content-length"];
  return request.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/**
 * The charset a Content-Type names, in lower case, or undefined when it names none. A header
 * `content-type` cannot read is left to the body parser, which refuses it (415).
 */
function charsetOf(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  try {
    return parse(contentType).parameters.charset?.toLowerCase();
  } catch {
    return undefined;
  }
}

/** Whether every coding a Content-Encoding lists is `identity`, the only one never decoded. */
function isIdentity(contentEncoding: string): boolean {
  return contentEncoding.split(",").every((coding) => {
    const name = coding.trim().toLowerCase();
    return name === "identity" || name === "";
  });
}

/** Options of {@link bodyEncodingCheck}. */
export interface BodyEncodingCheckOptions {
  readonly sendEnvelope: SendEnvelope;
}

const plugin: FastifyPluginCallback<BodyEncodingCheckOptions> = (app, { sendEnvelope }, done) => {
  // preParsing: after every onRequest hook (401, 403, 404, 405 come first) and before the body is read.
  addBodyPreParsing(app, (request, reply, payload, next) => {
    if (!declaresBody(request)) {
      next(null, payload);
      return;
    }
    const encoding = request.headers["content-encoding"];
    if (encoding !== undefined && !isIdentity(encoding)) {
      sendEnvelope(reply, 415, { message: HTTP_MESSAGES.unsupportedContentEncoding });
      return;
    }
    const charset = charsetOf(request.headers["content-type"]);
    if (charset !== undefined && !UTF8_CHARSETS.has(charset)) {
      sendEnvelope(reply, 415, { message: HTTP_MESSAGES.unsupportedCharset });
      return;
    }
    next(null, payload);
  });
  done();
};

/**
 * Refuses with a 415 envelope, before reading it, a body the JSON parser would misread: one
 * declared in a charset other than UTF-8 (`charset=latin1`, `utf-16`), or sent with a
 * `Content-Encoding` other than `identity` (the service decodes none). Without it such a body
 * was parsed as if plain UTF-8: a gzip body as malformed JSON, a Latin-1 one as whatever its
 * bytes spell in UTF-8.
 */
export const bodyEncodingCheck = fp(plugin, { name: "posts-body-encoding-check", fastify: "5.x" });
