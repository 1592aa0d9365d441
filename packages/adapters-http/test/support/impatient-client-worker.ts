import { connect, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { parentPort } from "node:worker_threads";
import {
  type ClientMessage,
  completeAnswer,
  type ImpatientRequest,
  jsonBody,
  type RawAnswer,
  type WorkerMessage,
} from "./impatient-client.js";

// A worker of its own, because the race only shows between two event loops: in the server's loop,
// the client would always read the answer before it could try another write into the reset.
parentPort?.on("message", (message: ClientMessage) => {
  sendImpatiently(message.port, message.request).then(
    (answer) => parentPort?.postMessage({ id: message.id, answer } satisfies WorkerMessage),
    (error: Error) =>
      parentPort?.postMessage({ id: message.id, error: error.message } satisfies WorkerMessage),
  );
});

const CHUNK_BYTES = 256 * 1024;

/**
 * Sends `request` on a new connection and answers the first complete HTTP answer (head and
 * `Content-Length` bytes of body), then destroys the connection. Rejects, with what had been
 * received, when the connection fails or closes before the answer is complete: a reset is a
 * failure, whatever the server meant to say.
 */
function sendImpatiently(port: number, request: ImpatientRequest): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let received = Buffer.alloc(0);
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      outcome();
    };
    const failure = (why: string) =>
      new Error(`${why} after ${received.length} bytes of answer: ${JSON.stringify(received.toString())}`);

    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const answer = completeAnswer(received);
      if (answer !== undefined) settle(() => resolve(answer));
    });
    socket.on("error", (error: NodeJS.ErrnoException) =>
      settle(() => reject(failure(error.code ?? error.message))),
    );
    socket.on("close", () => settle(() => reject(failure("closed"))));
    socket.once("connect", () => {
      void writeBody(socket, request, () => received.length > 0);
    });
  });
}

async function writeBody(socket: Socket, request: ImpatientRequest, answered: () => boolean): Promise<void> {
  const framing = request.chunked
    ? "Transfer-Encoding: chunked\r\n"
    : `Content-Length: ${request.bodyBytes}\r\n`;
  const extra = Object.entries(request.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  let head = Buffer.from(
    `${request.method} ${request.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}${framing}\r\n`,
  );
  if (request.holdHeadMs !== undefined) {
    socket.write(head.subarray(0, -2));
    await sleep(request.holdHeadMs);
    head = head.subarray(-2);
  }
  const body = jsonBody(request.bodyBytes);
  const frame = (piece: Buffer) =>
    request.chunked ? [Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")] : [piece];
  const last = request.chunked ? [Buffer.from("0\r\n\r\n")] : [];

  if (request.writes === "whole") {
    socket.write(Buffer.concat([head, ...frame(body), ...last]));
    return;
  }
  let pending: Buffer[] = [head];
  for (let offset = 0; offset < body.length; offset += CHUNK_BYTES) {
    if (answered() || socket.destroyed) return;
    const data = Buffer.concat([...pending, ...frame(body.subarray(offset, offset + CHUNK_BYTES))]);
    pending = [];
    await new Promise<void>((written) => socket.write(data, () => written()));
  }
  if (!answered() && !socket.destroyed) socket.write(Buffer.concat(last));
}
