/**
 * A JSON object of exactly `bytes` bytes, `{"title":"t","content":"xx…"}`: over `BODY_LIMIT`
 * when `bytes` is the limit plus one, valid in every other respect.
 */
export function jsonOfSize(bytes: number): string {
  const frame = '{"title":"t","content":""}';
  return `${frame.slice(0, -2)}${"x".repeat(Math.max(0, bytes - frame.length))}"}`;
}

/** Streams `text` in 64 KiB chunks: fetch sends such a body chunked, with no Content-Length. */
export function chunkedStream(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) {
        controller.close();
        return;
      }
      controller.enqueue(bytes.subarray(at, at + 65_536));
      at += 65_536;
    },
  });
}

/** Every Unicode White_Space character: a title or content made of them is blank (docs/posts.md#title-and-content-the-rules). */
export const UNICODE_WHITE_SPACE =
  "\t\n\u000b\f\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000";
