import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";

/** What came back while a large body was being sent. */
export interface LargeBodyExchange {
  /** Status of the answer, when its status line arrived. */
  readonly status: number | undefined;
  /** Its headers, names lower-cased. */
  readonly headers: Readonly<Record<string, string>>;
  /** Its body as UTF-8 text, as far as it arrived. */
  readonly body: string;
  /** Whether the whole answer arrived: status line, headers, and every byte its framing announces. */
  readonly complete: boolean;
  /** Body bytes written before the answer was complete (or the connection failed). */
  readonly bytesSent: number;
  /** The socket error (e.g. `ECONNRESET`) that ended the exchange before the answer was complete. */
  readonly error: string | undefined;
}

/** The request to send: everything but the body, which is `bodyBytes` bytes of filler. */
export interface LargeBodyRequest {
  readonly method: string;
  readonly path: string;
  /** Request headers; `Host` and `Content-Length` are added. Never `Expect`. */
  readonly headers: Readonly<Record<string, string>>;
  /** The declared and (at most) sent length of the body. */
  readonly bodyBytes: number;
}

const CHUNK_BYTES = 256 * 1024;
const GIVE_UP_MS = 60_000;

/**
 * Sends a request with a large body on a raw connection, without `Expect: 100-continue`, as a
 * client that does not wait for permission would: the body goes out in 256 KiB chunks, and
 * sending stops as soon as the whole answer has arrived
 * (docs/errors.md#answers-before-the-body-has-arrived: an answer decided before the body was read
 * must still reach such a client, never a reset connection). Resolves with what arrived; never
 * rejects.
 */
export function sendLargeBody(origin: URL, request: LargeBodyRequest): Promise<LargeBodyExchange> {
  return new Promise((resolve) => {
    const secure = origin.protocol === "https:";
    const port = Number(origin.port || (secure ? 443 : 80));
    const host = origin.hostname.replace(/^\[|\]$/g, "");
    const socket: Socket = secure
      ? connectTls({ host, port, servername: host }, () => void pump())
      : connectTcp({ host, port }, () => void pump());

    const received: Buffer[] = [];
    let answer: ParsedAnswer = { status: undefined, headers: {}, body: Buffer.alloc(0), complete: false };
    let bytesSent = 0;
    let error: string | undefined;
    let finished = false;
    const chunk = Buffer.alloc(CHUNK_BYTES, "x".charCodeAt(0));

    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(giveUp);
      socket.destroy();
      resolve({
        status: answer.status,
        headers: answer.headers,
        body: answer.body.toString("utf8"),
        complete: answer.complete,
        bytesSent,
        error,
      });
    };
    const giveUp = setTimeout(finish, GIVE_UP_MS);

    socket.on("data", (data: Buffer) => {
      received.push(data);
      answer = parseAnswer(Buffer.concat(received), false);
      if (answer.complete) finish();
    });
    socket.on("end", () => {
      answer = parseAnswer(Buffer.concat(received), true);
      finish();
    });
    socket.on("error", (failure: NodeJS.ErrnoException) => {
      answer = parseAnswer(Buffer.concat(received), false);
      if (!answer.complete) error = failure.code ?? failure.message;
      finish();
    });
    socket.on("close", finish);

    const head = [
      `${request.method} ${request.path} HTTP/1.1`,
      `Host: ${origin.host}`,
      ...Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`),
      `Content-Length: ${request.bodyBytes}`,
    ].join("\r\n");

    async function pump(): Promise<void> {
      socket.write(`${head}\r\n\r\n`);
      while (!finished && bytesSent < request.bodyBytes) {
        const size = Math.min(CHUNK_BYTES, request.bodyBytes - bytesSent);
        const flushed = socket.write(size === CHUNK_BYTES ? chunk : chunk.subarray(0, size));
        bytesSent += size;
        if (!flushed) await drainedOrFinished();
      }
    }

    function drainedOrFinished(): Promise<void> {
      return new Promise((next) => {
        const done = () => {
          socket.off("drain", done);
          socket.off("close", done);
          next();
        };
        socket.once("drain", done);
        socket.once("close", done);
      });
    }
  });
}

interface ParsedAnswer {
  readonly status: number | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly complete: boolean;
}

// Reads one HTTP/1.1 response, skipping interim (1xx) ones. `ended`: the server closed the
// connection, which completes a response framed by the connection's end.
function parseAnswer(bytes: Buffer, ended: boolean): ParsedAnswer {
  let start = 0;
  for (;;) {
    const end = bytes.indexOf("\r\n\r\n", start);
    if (end === -1) return { status: undefined, headers: {}, body: Buffer.alloc(0), complete: false };
    const [statusLine = "", ...lines] = bytes.subarray(start, end).toString("latin1").split("\r\n");
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]) || undefined;
    if (status !== undefined && status >= 100 && status < 200) {
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
      return { status, headers, body: rest.subarray(0, expected), complete: rest.length >= expected };
    }
    if (/chunked/i.test(headers["transfer-encoding"] ?? "")) return { status, headers, ...dechunk(rest) };
    return { status, headers, body: rest, complete: ended };
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
