import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import type { Reply } from "./api-client.js";
import { parseAnswer } from "./parse-answer.js";

/** What came back to a request sent as raw bytes: a {@link Reply} (status 0 when none arrived). */
export interface RawReply extends Reply {
  /** The interim (1xx) statuses that came before the answer, e.g. `[100]`. */
  readonly interim: readonly number[];
}

/** A request to send as written, for what `fetch` will not send (a `Host` of one's own, `Expect`). */
export interface RawRequest {
  readonly method: string;
  readonly path: string;
  /** Request headers, sent as given; `Host` is the deployment's unless given here. */
  readonly headers: Readonly<Record<string, string>>;
  /** A body, sent with its Content-Length right after the head; none when absent. */
  readonly body?: string;
  /** How long to wait for the whole answer (default 5 s); what arrived by then is answered. */
  readonly waitMs?: number;
}

/**
 * Sends one request on a connection of its own (`Connection: close`) and answers what came back
 * once the answer is complete, the server closed, or `waitMs` passed. Never rejects.
 */
export function sendRaw(origin: URL, request: RawRequest): Promise<RawReply> {
  return new Promise((resolve) => {
    const secure = origin.protocol === "https:";
    const port = Number(origin.port || (secure ? 443 : 80));
    const hostname = origin.hostname.replace(/^\[|\]$/g, "");
    const headers: Record<string, string> = { Host: origin.host, Connection: "close", ...request.headers };
    if (request.body !== undefined) headers["Content-Length"] = String(Buffer.byteLength(request.body));
    const head = [
      `${request.method} ${request.path} HTTP/1.1`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ].join("\r\n");
    const send = () => socket.write(`${head}\r\n\r\n${request.body ?? ""}`);
    const socket: Socket = secure
      ? connectTls({ host: hostname, port, servername: hostname }, send)
      : connectTcp({ host: hostname, port }, send);

    const received: Buffer[] = [];
    let finished = false;
    const finish = (ended: boolean) => {
      if (finished) return;
      finished = true;
      clearTimeout(giveUp);
      socket.destroy();
      const answer = parseAnswer(Buffer.concat(received), ended);
      resolve({
        request: `${request.method} ${request.path} (raw)`,
        interim: answer.interim,
        status: answer.status ?? 0,
        headers: new Headers(answer.headers),
        bytes: new Uint8Array(answer.body),
        text: answer.body.toString("utf8"),
      });
    };
    const giveUp = setTimeout(() => finish(false), request.waitMs ?? 5000);
    socket.on("data", (data: Buffer) => {
      received.push(data);
      if (parseAnswer(Buffer.concat(received), false).complete) finish(false);
    });
    socket.on("end", () => finish(true));
    socket.on("error", () => finish(false));
    socket.on("close", () => finish(true));
  });
}
