/** One HTTP/1.1 response read from raw bytes, as far as it arrived. */
export interface ParsedAnswer {
  /** The interim (1xx) statuses that came before it, in order. */
  readonly interim: readonly number[];
  readonly status: number | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly complete: boolean;
}

/**
 * Reads one HTTP/1.1 response from the bytes a connection received, past the interim (1xx) ones
 * it lists. `ended`: the server closed the connection, which completes a response framed by the
 * connection's end.
 */
export function parseAnswer(bytes: Buffer, ended: boolean): ParsedAnswer {
  const interim: number[] = [];
  let start = 0;
  for (;;) {
    const end = bytes.indexOf("\r\n\r\n", start);
    if (end === -1)
      return { interim, status: undefined, headers: {}, body: Buffer.alloc(0), complete: false };
    const [statusLine = "", ...lines] = bytes.subarray(start, end).toString("latin1").split("\r\n");
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]) || undefined;
    if (status !== undefined && status >= 100 && status < 200) {
      interim.push(status);
      start = end + 4;
      continue;
    }
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const rest = bytes.subarray(end + 4);
    const length = headers["content-length"];
    if (length !== undefined) {
      const expected = Number(length);
      return {
        interim,
        status,
        headers,
        body: rest.subarray(0, expected),
        complete: rest.length >= expected,
      };
    }
    if (/chunked/i.test(headers["transfer-encoding"] ?? ""))
      return { interim, status, headers, ...dechunk(rest) };
    return { interim, status, headers, body: rest, complete: ended };
  }
}

function dechunk(bytes: Buffer): { readonly body: Buffer; readonly complete: boolean } {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf("\r\n", at);
    if (lineEnd === -1) return { body: Buffer.concat(parts), complete: false };
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString("latin1"), 16);
    if (Number.isNaN(size)) return { body: Buffer.concat(parts), complete: false };
    if (size === 0) return { body: Buffer.concat(parts), complete: true };
    const dataStart = lineEnd + 2;
    if (bytes.length < dataStart + size + 2) return { body: Buffer.concat(parts), complete: false };
    parts.push(bytes.subarray(dataStart, dataStart + size));
    at = dataStart + size + 2;
  }
}
