import { errorCodes, type FastifyInstance } from "fastify";

// `fatal`: a byte sequence that is not UTF-8 throws instead of becoming U+FFFD. One decoder
// serves every request: without `{ stream: true }`, decode keeps no state between calls.
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Replaces Fastify's `application/json` body parser with one that refuses, as malformed JSON
 * (400), a body that is not valid UTF-8 (RFC 8259 §8.1), where Fastify's would turn the invalid
 * bytes into U+FFFD and the post would be stored altered. The rest is Fastify's own parser: the
 * body limit enforced while reading (413), an empty body (400), and secure-json-parse refusing
 * `__proto__` and `constructor.prototype` keys (400). A leading BOM is dropped, as Fastify's parser drops it.
 */
export function useStrictUtf8JsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    let text: string;
    try {
      // Fastify's types do not narrow the body to the `parseAs` asked for.
      text = UTF8.decode(body as Buffer);
    } catch {
      done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined);
      return;
    }
    parseJson(request, text, done);
  });
}
