import { createParser } from "eventsource-parser";

/** One event of a Server-Sent Events stream, with when it arrived. */
export interface ArrivedEvent {
  readonly id: string | undefined;
  readonly event: string | undefined;
  readonly data: string | undefined;
  readonly arrivedAt: number;
}

/** A change feed stream read with fetch, parsed as the SSE format says. */
export interface EventStreamReader {
  readonly status: number;
  readonly contentType: string | null;
  /** The messages received so far (comments left out), in order. */
  readonly events: ArrivedEvent[];
  /** Resolves once `predicate` holds of the messages received; rejects after `timeoutMs`. */
  until(predicate: (events: ArrivedEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): void;
}

/** Opens `url` with `Accept: text/event-stream` (and `headers`), and reads it until closed. */
export async function readEventStream(
  url: string,
  headers: Record<string, string> = {},
): Promise<EventStreamReader> {
  const abort = new AbortController();
  const response = await fetch(url, {
    headers: { accept: "text/event-stream", ...headers },
    signal: abort.signal,
  });
  const events: ArrivedEvent[] = [];
  const waiters = new Set<() => void>();
  const parser = createParser({
    onEvent: (message) =>
      events.push({ id: message.id, event: message.event, data: message.data, arrivedAt: Date.now() }),
  });
  void (async () => {
    if (response.body === null) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) {
        parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
        for (const wake of waiters) wake();
      }
    } catch {
      // Closed by the test, or by the server.
    }
  })();
  return {
    status: response.status,
    contentType: response.headers.get("content-type"),
    events,
    until(predicate, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        if (predicate(events)) {
          resolve();
          return;
        }
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(`event stream: condition not met within ${timeoutMs} ms (${events.length} events)`),
          );
        }, timeoutMs);
        const check = () => {
          if (!predicate(events)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
      });
    },
    close: () => abort.abort(),
  };
}
