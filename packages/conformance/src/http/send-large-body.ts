import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import { type ParsedAnswer, parseAnswer } from "./parse-answer.js";

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
    let answer: ParsedAnswer = {
      interim: [],
      status: undefined,
      headers: {},
      body: Buffer.alloc(0),
      complete: false,
    };
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
