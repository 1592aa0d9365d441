import { type IncomingMessage, request } from "node:http";

/** One message of a Server-Sent Events stream, or a comment line. */
export interface StreamMessage {
  readonly id?: string;
  readonly event?: string;
  readonly data?: string;
  /** The text of a comment line (after the colon), for a comment. */
  readonly comment?: string;
}

/** An open Server-Sent Events stream read over a real socket. */
export interface OpenStream {
  readonly response: IncomingMessage;
  /** Every message and comment received so far, in order. */
  readonly messages: StreamMessage[];
  /** The messages with an id, in order. */
  events(): StreamMessage[];
  /** Resolves once `predicate` holds of what was received (rejects after `timeoutMs`). */
  until(predicate: (messages: StreamMessage[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

/**
 * Opens `path` on 127.0.0.1:`port` with `Accept: text/event-stream` and parses what arrives as
 * the SSE format says (fields per line, a blank line ends a message, a line starting with a
 * colon is a comment), for tests that need the real stream.
 */
export function openStream(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: "127.0.0.1",
      port,
      path,
      headers: { accept: "text/event-stream", ...headers },
    });
    req.on("error", reject);
    req.on("response", (response) => {
      const messages: StreamMessage[] = [];
      const waiters = new Set<() => void>();
      let buffer = "";
      let current: Record<string, string> = {};
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        buffer += chunk;
        let newline = buffer.indexOf("\n");
        while (newline >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line === "") {
            if (Object.keys(current).length > 0) messages.push(current);
            current = {};
          } else if (line.startsWith(":")) {
            messages.push({ comment: line.slice(1).trim() });
          } else {
            const colon = line.indexOf(":");
            const value = line.slice(colon + 1);
            current[line.slice(0, colon)] = value.startsWith(" ") ? value.slice(1) : value;
          }
          newline = buffer.indexOf("\n");
        }
        for (const wake of waiters) wake();
      });
      const ended = new Promise<void>((done) => {
        response.on("end", done);
        response.on("close", done);
      });
      resolve({
        response,
        messages,
        events: () => messages.filter((message) => message.id !== undefined),
        until(predicate, timeoutMs = 5000) {
          return new Promise((done, fail) => {
            if (predicate(messages)) {
              done();
              return;
            }
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(
                new Error(
                  `stream: condition not met within ${timeoutMs} ms; got ${JSON.stringify(messages)}`,
                ),
              );
            }, timeoutMs);
            const check = () => {
              if (!predicate(messages)) return;
              clearTimeout(timer);
              waiters.delete(check);
              done();
            };
            waiters.add(check);
          });
        },
        ended,
        close: () => req.destroy(),
      });
    });
    req.end();
  });
}
