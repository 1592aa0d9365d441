import { connect, type Socket } from "node:net";

/** What came back on a raw connection, and whether and when the server closed it. */
export interface RawResponse {
  /** The status of the first response, when one arrived. */
  readonly status: number | undefined;
  /** Its headers, names lower-cased; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Milliseconds from the connection to its closing by the server; undefined if still open. */
  readonly closedAfterMs: number | undefined;
  /** Milliseconds from the connection to the first byte of the answer; undefined if none came. */
  readonly answeredAfterMs: number | undefined;
}

/**
 * Writes `request` byte for byte on a new connection to 127.0.0.1:`port`, then, every `everyMs`,
 * one more byte of `trickle` if given. Collects what the server sends until it closes the
 * connection or `giveUpMs` passes (then the test closes it and `closedAfterMs` is undefined).
 * For what `fetch` refuses to send: invalid bytes, repeated headers, requests that never end.
 */
export function rawExchange(
  port: number,
  request: string | Buffer,
  options: { readonly giveUpMs: number; readonly trickle?: string; readonly everyMs?: number },
): Promise<RawResponse> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket: Socket = connect(port, "127.0.0.1", () => socket.write(request));
    const received: Buffer[] = [];
    let closedAfterMs: number | undefined;
    let answeredAfterMs: number | undefined;
    let sent = 0;
    const trickler =
      options.trickle === undefined
        ? undefined
        : setInterval(() => {
            const next = options.trickle?.[sent++];
            if (next !== undefined && socket.writable) socket.write(next);
          }, options.everyMs ?? 100);
    const giveUp = setTimeout(() => socket.destroy(), options.giveUpMs);
    socket.on("data", (chunk: Buffer) => {
      answeredAfterMs ??= performance.now() - started;
      received.push(chunk);
    });
    socket.on("end", () => {
      closedAfterMs = performance.now() - started;
      socket.destroy();
    });
    // A reset (the server destroying the socket) also counts as the server closing it.
    socket.on("error", () => {
      closedAfterMs ??= performance.now() - started;
    });
    socket.on("close", () => {
      clearInterval(trickler);
      clearTimeout(giveUp);
      resolve({
        ...parseResponse(Buffer.concat(received).toString("utf8")),
        closedAfterMs,
        answeredAfterMs,
      });
    });
  });
}

function parseResponse(text: string): Pick<RawResponse, "status" | "headers" | "body"> {
  const end = text.indexOf("\r\n\r\n");
  if (end === -1) return { status: undefined, headers: {}, body: "" };
  const [statusLine = "", ...lines] = text.slice(0, end).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"] ?? Number.NaN);
  const rest = text.slice(end + 4);
  return {
    status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]) || undefined,
    headers,
    body: Number.isInteger(length) ? Buffer.from(rest).subarray(0, length).toString("utf8") : rest,
  };
}

/**
 * The head of an HTTP/1.1 request; `headers` may repeat a name, which `fetch` cannot. It names
 * `Host: 127.0.0.1` unless `headers` carry a `Host` of their own.
 */
export function requestHead(
  method: string,
  path: string,
  headers: readonly (readonly [string, string])[],
): string {
  const ownHost = headers.some(([name]) => name.toLowerCase() === "host");
  const lines = [
    `${method} ${path} HTTP/1.1`,
    ...(ownHost ? [] : ["Host: 127.0.0.1"]),
    ...headers.map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join("\r\n")}\r\n\r\n`;
}
