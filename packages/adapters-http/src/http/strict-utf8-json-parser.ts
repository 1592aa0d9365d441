import { errorCodes, type FastifyInstance } from "fastify";
import { BodyLost, JSON_THREAD_MIN_BYTES, type JsonThread } from "./json-thread.js";

// `fatal`: a byte sequence that is not UTF-8 throws instead of becoming U+FFFD. One decoder
// serves every request: without `{ stream: true }`, decode keeps no state between calls.
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Replaces Fastify's `application/json` body parser with one that refuses, as malformed JSON
 * (400), a body that is not valid UTF-8 (RFC 8259 §8.1), where Fastify's would turn the invalid
 * bytes into U+FFFD and the post would be stored altered. The rest is Fastify's own parser: the
 * body limit enforced while reading (413), an empty body (400), and secure-json-parse refusing
 * `__proto__` and `constructor.prototype` keys (400). A leading BOM is dropped, as Fastify's parser drops it.
 *
 * Given a `thread`, a body of `JSON_THREAD_MIN_BYTES` or more is decoded and parsed there, with
 * the same decoder and parser and the same outcome, so that a body of megabytes does not hold
 * the event loop; should the thread fail before it takes the body, it is parsed here, and should it
 * fail holding it (a large body is transferred, not copied), the request is answered 503.
 */
export function useStrictUtf8JsonParser(app: FastifyInstance, thread?: JsonThread): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  const parseHere = (request: Parameters<typeof parseJson>[0], body: Buffer, done: Done) => {
    let text: string;
    try {
      text = UTF8.decode(body);
    } catch {
      done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined);
      return;
    }
    parseJson(request, text, done);
  };
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, raw, done) => {
    // Fastify's types do not narrow the body to the `parseAs` asked for.
    const body = raw as Buffer;
    if (thread === undefined || body.length < JSON_THREAD_MIN_BYTES) {
      parseHere(request, body, done);
      return;
    }
    void thread.parse(body).then((parsed) => {
      if (parsed === undefined) parseHere(request, body, done);
      else if (parsed.ok) done(null, parsed.value);
      else if (parsed.lost === true) done(new BodyLost(), undefined);
      else done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined);
    });
  });
}

type Done = (error: Error | null, body?: unknown) => void;
