import { createParser, type EventSourceMessage } from "eventsource-parser";

/** One event of the feed's Server-Sent Events stream. */
export interface FeedEvent {
  readonly id: number;
  readonly event: string;
  readonly data: string;
}

/** What a follower saw, connection by connection. */
export interface FollowerRecord {
  /** Every event id received, in order of arrival, across all its connections. */
  readonly ids: number[];
  /** `reset` events received (none are expected while nothing is pruned). */
  readonly resets: string[];
  /** How many connections it opened, and how many of them ended without its asking. */
  connections: number;
  cutOff: number;
}

/**
 * A client of `GET /api/v1/posts/events` as text/event-stream that reconnects whenever its
 * connection ends (dropped by itself at random moments, or cut by an instance dying), each time
 * to an instance `pickUrl` chooses, resuming with `Last-Event-ID`. It stops once it has received
 * the event numbered `until()` (when set) and `stop()` was called.
 */
export class SseFollower {
  readonly record: FollowerRecord = { ids: [], resets: [], connections: 0, cutOff: 0 };
  readonly #pickUrl: () => string;
  readonly #dropAfterMs: () => number;
  readonly #first: { readonly after?: number };
  #target: number | undefined;
  #running: Promise<void> | undefined;
  #current: AbortController | undefined;

  /**
   * `first.after` is where the first connection starts (`?after=`); without it, the first
   * connection starts at the current end, as a client that only wants what comes next.
   */
  constructor(pickUrl: () => string, dropAfterMs: () => number, first: { readonly after?: number } = {}) {
    this.#pickUrl = pickUrl;
    this.#dropAfterMs = dropAfterMs;
    this.#first = first;
  }

  start(): void {
    this.#running = this.#loop();
  }

  /** Resolves once every event up to `last` has been received (or rejects after `timeoutMs`). */
  async finish(last: number, timeoutMs: number): Promise<void> {
    this.#target = last;
    if (this.#lastId() >= last) this.#current?.abort();
    const timer = setTimeout(() => {
      this.#target = -1;
      this.#current?.abort();
    }, timeoutMs);
    await this.#running;
    clearTimeout(timer);
    if (this.#lastId() < last) {
      throw new Error(
        `a follower stopped at event ${this.#lastId()}, short of ${last}, after ${timeoutMs} ms`,
      );
    }
  }

  #lastId(): number {
    return this.record.ids.at(-1) ?? 0;
  }

  #done(): boolean {
    return this.#target !== undefined && (this.#target < 0 || this.#lastId() >= this.#target);
  }

  async #loop(): Promise<void> {
    while (!this.#done()) {
      const controller = new AbortController();
      this.#current = controller;
      const drop = setTimeout(() => controller.abort(), this.#dropAfterMs());
      const resumeFrom = this.record.ids.at(-1);
      const headers: Record<string, string> = { accept: "text/event-stream" };
      let query = "";
      if (resumeFrom !== undefined) headers["last-event-id"] = String(resumeFrom);
      else if (this.record.connections === 0 && this.#first.after !== undefined)
        query = `?after=${this.#first.after}`;
      else if (this.record.connections > 0) query = "?after=0";
      this.record.connections++;
      try {
        const response = await fetch(`${this.#pickUrl()}/api/v1/posts/events${query}`, {
          headers,
          signal: controller.signal,
        });
        if (response.status !== 200 || response.body === null) {
          throw new Error(`the feed answered ${response.status}`);
        }
        await this.#read(response.body, controller);
        if (!controller.signal.aborted) this.record.cutOff++;
      } catch {
        if (!controller.signal.aborted) {
          this.record.cutOff++;
          // The instance chosen is gone or not up yet: try another in a moment.
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      } finally {
        clearTimeout(drop);
      }
    }
  }

  /** Reads the stream until it ends, or until the follower is done. */
  async #read(body: ReadableStream<Uint8Array>, controller: AbortController): Promise<void> {
    const parser = createParser({ onEvent: (message) => this.#dispatch(message) });
    const decoder = new TextDecoder();
    for await (const chunk of body) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (this.#done()) {
        controller.abort();
        return;
      }
    }
  }

  #dispatch(message: EventSourceMessage): void {
    if (message.event === "reset") {
      this.record.resets.push(message.data);
      return;
    }
    if (message.id === undefined || message.data === "") return;
    this.record.ids.push(Number(message.id));
  }
}
