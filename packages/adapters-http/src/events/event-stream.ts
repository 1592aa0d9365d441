import type { ServerResponse } from "node:http";
import type { ChangeFeedHub, RenderedEvent } from "./change-feed-hub.js";

/** The longest the feed may stay silent: a comment at least every 15 s keeps idle connections open (docs/change-events.md#as-a-stream). */
export const MAX_HEARTBEAT_MS = 15_000;
const STREAM_PAGE = 500;

/** One event as a Server-Sent Events message: `id`, `event` and the CloudEvent on one `data` line. */
export function eventMessage(event: RenderedEvent): string {
  return `id: ${event.number}\nevent: ${event.type}\ndata: ${event.json}\n\n`;
}

/** The message that opens a stream resumed before the oldest event kept. */
export function resetMessage(oldest: number): string {
  return `event: reset\ndata: {"oldest":${oldest}}\n\n`;
}

/**
 * The open Server-Sent Events streams of one app: one timer writes every stream's keep-alive
 * comment (a thousand idle streams cost one timer, not a thousand), and closing the app ends them
 * all, so that it does not wait for clients that never hang up.
 *
 * Written by hand on the raw response rather than through an SSE plugin: the format is three
 * lines per event, and what matters here is what a plugin does not do for us, namely sharing
 * the rendered events of the hub among streams and pausing a stream whose client reads slowly
 * (it then falls behind and reads from the log, instead of growing a buffer in memory).
 */
export class EventStreams {
  readonly #streams = new Set<ServerResponse>();
  readonly #timer: NodeJS.Timeout;
  #closed = false;

  /** `heartbeatMs`: how often each stream gets a comment line; at most 15 000. */
  constructor(heartbeatMs: number) {
    this.#timer = setInterval(() => this.#heartbeat(), Math.min(heartbeatMs, MAX_HEARTBEAT_MS));
    this.#timer.unref();
  }

  /** Whether {@link close} was called: a stream asked for from then on is refused (503). */
  get closed(): boolean {
    return this.#closed;
  }

  /** How many streams are open. */
  get size(): number {
    return this.#streams.size;
  }

  /**
   * Serves one stream on `response`, whose headers it writes, from the events after `after`
   * (the first page, read already, in `first`) until the client goes or the app closes. When
   * `first` does not begin at `after + 1`, the events between were dropped by the retention: the
   * stream opens with a reset message naming the oldest kept. A failure to read the log ends the
   * stream (the client resumes with Last-Event-ID). Call it only while not {@link closed}: the
   * caller answers the refusal, with the service's error envelope, before taking the response.
   */
  async serve(
    response: ServerResponse,
    headers: Readonly<Record<string, string | number | readonly string[]>>,
    hub: ChangeFeedHub,
    after: number,
    first: readonly RenderedEvent[],
  ): Promise<void> {
    if (this.#closed) throw new Error("EventStreams.serve called after close");
    response.writeHead(200, {
      ...headers,
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      // Tells a buffering proxy (nginx) to pass each message on at once.
      "x-accel-buffering": "no",
      // A stream ends only when the client goes or the app closes; then the connection goes too,
      // rather than lingering as an idle keep-alive connection that a closing server has already
      // stopped looking for.
      connection: "close",
    });
    // Sends the headers now: the client knows the stream is open before the first event.
    response.write(": posts change events\n\n");
    this.#streams.add(response);
    const gone = new AbortController();
    response.on("close", () => gone.abort());
    let position = after;
    let events = first;
    try {
      while (!gone.signal.aborted) {
        if (events.length === 0) {
          await hub.waitAfter(position, gone.signal);
          if (this.#closed) break;
          events = await hub.read(position, STREAM_PAGE);
          continue;
        }
        let chunk = "";
        const oldest = (events[0] as RenderedEvent).number;
        if (oldest !== position + 1) chunk += resetMessage(oldest);
        for (const event of events) chunk += eventMessage(event);
        position = (events.at(-1) as RenderedEvent).number;
        if (!response.write(chunk)) await drained(response);
        events = gone.signal.aborted ? [] : await hub.read(position, STREAM_PAGE);
      }
    } catch {
      // The log failed: the client reconnects and resumes from the last id it received.
      response.destroy();
    } finally {
      this.#streams.delete(response);
      if (!response.writableEnded) response.end();
    }
  }

  /** Ends every stream and stops the timer; later streams are refused. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    for (const response of this.#streams) response.end();
    this.#streams.clear();
  }

  #heartbeat(): void {
    for (const response of this.#streams) {
      // A stream that cannot take more has not been idle.
      if (!response.writableNeedDrain) response.write(": keep-alive\n\n");
    }
  }
}

function drained(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      response.off("drain", done);
      response.off("close", done);
      resolve();
    };
    response.on("drain", done);
    response.on("close", done);
  });
}
