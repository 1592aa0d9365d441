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
  void (async () => {
    if (response.body === null) return;
    const decoder = new TextDecoder();
    let buffer = "";
    let current: Record<string, string> = {};
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let newline = buffer.indexOf("\n");
        while (newline >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line === "") {
            if (Object.keys(current).length > 0) {
              events.push({
                id: current.id,
                event: current.event,
                data: current.data,
                arrivedAt: Date.now(),
              });
            }
            current = {};
          } else if (!line.startsWith(":")) {
            const colon = line.indexOf(":");
            const value = line.slice(colon + 1);
            current[line.slice(0, colon)] = value.startsWith(" ") ? value.slice(1) : value;
          }
          newline = buffer.indexOf("\n");
        }
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
