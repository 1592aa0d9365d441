import { errorOf } from "./answers.js";
import { backoffDelay, DEFAULT_RETRY } from "./backoff.js";
import type { components } from "./generated/openapi.js";
import type { ClientError } from "./result.js";
import type { ClientOptions } from "./transport.js";

/**
 * One change of a post, a CloudEvents 1.0 object: `id` is its number in the service's one
 * sequence (a decimal string), `type` `post.created` | `post.updated` | `post.deleted`,
 * `subject` the post's id, `data` the post after the change (`{ id }` for a deletion).
 */
export type PostEvent = components["schemas"]["ChangeEvent"];

/** Where to start following the feed. */
export interface FollowOptions {
  /** Start after this event number; by default at the current end (only new events). */
  readonly after?: number;
  /** Ends the iteration (no error). */
  readonly signal?: AbortSignal;
}

/**
 * The service's change events as an async iterable that follows the Server-Sent Events stream,
 * reconnecting after a disconnect with `Last-Event-ID` and never yielding an event twice.
 * A refusal ends it with {@link EventFeed.error} set (`gone` when resuming before the oldest kept event).
 */
export class EventFeed implements AsyncIterable<PostEvent> {
  readonly #options: ClientOptions;
  readonly #follow: FollowOptions;
  #last: number | undefined;
  #error: ClientError | undefined;

  /** Use `client.events.follow(…)`. */
  constructor(options: ClientOptions, follow: FollowOptions) {
    this.#options = options;
    this.#follow = follow;
    this.#last = follow.after;
  }

  /** Why the iteration ended, when it was not the caller's signal. */
  get error(): ClientError | undefined {
    return this.#error;
  }

  /** The number of the last event yielded (or the `after` it started from). */
  get lastEventId(): number | undefined {
    return this.#last;
  }

  /** Every event from the starting point on, as they happen; reconnects by itself. */
  async *[Symbol.asyncIterator](): AsyncGenerator<PostEvent, void, undefined> {
    const policy = { ...DEFAULT_RETRY, ...this.#options.retry };
    let failures = 0;
    const signal = this.#follow.signal;
    while (!signal?.aborted) {
      const url = new URL("/api/v1/posts/events", this.#options.baseUrl);
      const headers: Record<string, string> = { accept: "text/event-stream" };
      // Last-Event-ID is how an SSE client resumes; with no number yet, the stream starts at its end.
      if (this.#last !== undefined) headers["last-event-id"] = String(this.#last);
      try {
        const response = await (this.#options.fetch ?? fetch)(url, {
          headers,
          ...(signal ? { signal } : {}),
        });
        if (response.status !== 200 || response.body === null) {
          const text = await response.text();
          if (response.status !== 503 && response.status !== 429) {
            this.#error = errorOf({
              status: response.status,
              headers: response.headers,
              text,
              url: String(url),
              maybeApplied: false,
            });
            return;
          }
          throw new Error(`HTTP ${response.status}`);
        }
        for await (const message of messages(response.body)) {
          if (message.event === "reset") {
            const text = `the events after ${this.#last} are no longer all kept (${message.data})`;
            this.#error = { kind: "gone", status: 200, message: text, maybeApplied: false };
            return;
          }
          const event = JSON.parse(message.data) as PostEvent;
          // A reconnection may replay what was seen: Last-Event-ID makes it rare, this makes it harmless.
          const number = Number(event.id);
          if (this.#last !== undefined && number <= this.#last) continue;
          this.#last = number;
          failures = 0;
          yield event;
        }
      } catch (cause) {
        if (signal?.aborted) return;
        failures += 1;
        if (failures >= policy.maxAttempts) {
          this.#error = {
            kind: "network",
            status: undefined,
            message: String(cause),
            cause,
            maybeApplied: false,
          };
          return;
        }
      }
      await new Promise((resolve) =>
        setTimeout(resolve, backoffDelay(Math.max(1, failures), policy, undefined, this.#options.random)),
      );
    }
  }
}

/**
 * The messages of an SSE body: `event` and `data` of each, comments and `retry` ignored.
 * Written here rather than taken from eventsource-parser (which the project's tests and bench
 * use) because the client promises no runtime dependency; the client's tests feed it comments
 * and events split across chunks.
 */
async function* messages(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.search(/\r?\n\r?\n/);
    while (end !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      let event = "message";
      const data: string[] = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
      if (data.length > 0) yield { event, data: data.join("\n") };
      end = buffer.search(/\r?\n\r?\n/);
    }
  }
}

/** `events` of a client: the service's change feed. */
export class Events {
  readonly #options: ClientOptions;

  /** Use `createClient(…).events`. */
  constructor(options: ClientOptions) {
    this.#options = options;
  }

  /**
   * Follows the change events: `for await (const event of client.events.follow({ after: 0 }))`.
   * It reconnects after a disconnect (backoff as for retries, `retry.maxAttempts` failures in a
   * row at most) from the last event it yielded, and yields each event once, in order.
   */
  follow(options: FollowOptions = {}): EventFeed {
    return new EventFeed(this.#options, options);
  }
}
