import { type IncomingMessage, request } from "node:http";
import { createParser } from "eventsource-parser";

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
 * Opens `path` on 127.0.0.1:`port` with `Accept: text/event-stream` and parses what arrives
 * (eventsource-parser, as an SSE client would), for tests that need the real stream.
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
      // Comments are kept too, in order: the keep-alive is one.
      const parser = createParser({
        onEvent: ({ id, event, data }) =>
          messages.push({
            ...(id === undefined ? {} : { id }),
            ...(event === undefined ? {} : { event }),
            data,
          }),
        onComment: (comment) => messages.push({ comment: comment.trim() }),
      });
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        parser.feed(chunk);
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
