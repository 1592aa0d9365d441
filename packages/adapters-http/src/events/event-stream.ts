import type { ServerResponse } from "node:http";
import { writePaced } from "../http/write-pacer.js";
import type { ChangeFeedHub } from "./change-feed-hub.js";
import { type FeedMessage, resetMessage } from "./feed-message.js";
import type { FeedReaders } from "./feed-readers.js";
import { waitUntil } from "./wait-until.js";

/** The longest the feed may stay silent: a comment at least every 15 s keeps idle connections open (docs/change-events.md#as-a-stream). */
export const MAX_HEARTBEAT_MS = 15_000;
/** How long a stream's client may leave a batch untaken before it is disconnected, by default. */
export const DEFAULT_STALL_MS = 30_000;
/**
 * One batch of a stream: what it writes at once, then waits for the client to take before it
 * writes more. As many events as fit in these bytes, and always at least one, whatever its size.
 */
export const STREAM_BATCH_BYTES = 256 * 1024;
const STREAM_BATCH_EVENTS = 500;

/** A batch of old events read for the replays at one position, with the turn it holds. */
interface HeldBatch {
  readonly messages: Promise<readonly FeedMessage[]>;
  /** Streams writing it or waiting for it; the turn is released when none is left. */
  holders: number;
  readonly release: () => void;
}

/** Options of {@link EventStreams}. */
export interface EventStreamsOptions {
  /** How often each stream gets a comment line; at most 15 000. */
  readonly heartbeatMs: number;
  /**
   * How long a stream waits for its client to take a batch before disconnecting it: a client
   * that stops reading holds one batch for this long at most. Default 30 000.
   */
  readonly stallMs?: number;
}

/** What the open streams of one app hold at the moment of asking. */
export interface EventStreamStats {
  /** Streams open. */
  readonly open: number;
  /** Bytes written to them that their sockets have not taken yet, in all. */
  readonly bufferedBytes: number;
  /** Streams disconnected, since the app started, because their client stopped reading. */
  readonly stalled: number;
}

/**
 * The open Server-Sent Events streams of one app: one timer writes every stream's keep-alive
 * comment (a thousand idle streams cost one timer, not a thousand), and closing the app ends them
 * all, so that it does not wait for clients that never hang up.
 *
 * Each stream writes one batch, bounded in bytes, then waits until its socket has taken it before
 * it writes the next: what a stream holds is one batch, however slowly its client reads, and a
 * client that leaves a batch untaken for `stallMs` is disconnected (it resumes with
 * Last-Event-ID). A stream at the end of the feed takes its batches from the hub, which reads and
 * renders each new event once for every follower, and writes the hub's own bytes (never a copy);
 * a stream behind the hub's tail (a replay) reads the log itself during one of the
 * {@link FeedReaders}' turns, which the batch holds until every client given it has taken it:
 * replays at one position share the read, the turn and the bytes, replays share a bounded number
 * of reads and of batches in memory, and they never hold up the followers.
 *
 * Written by hand on the raw response rather than through an SSE plugin: the format is three
 * lines per event, and what matters here is what a plugin does not do for us (sharing the hub's
 * messages, batches bounded in bytes, turns for replays, disconnecting a client that stopped).
 */
export class EventStreams {
  readonly #streams = new Set<ServerResponse>();
  readonly #timer: NodeJS.Timeout;
  readonly #stallMs: number;
  // The batches replays hold, by the position they follow.
  readonly #held = new Map<number, HeldBatch>();
  // The streams in the middle of writing a batch: not idle, and not to be given a comment.
  readonly #writing = new Set<ServerResponse>();
  #stalled = 0;
  #closed = false;

  constructor(options: EventStreamsOptions) {
    this.#timer = setInterval(() => this.#heartbeat(), Math.min(options.heartbeatMs, MAX_HEARTBEAT_MS));
    this.#timer.unref();
    this.#stallMs = options.stallMs ?? DEFAULT_STALL_MS;
  }

  /** Whether {@link close} was called: a stream asked for from then on is refused (503). */
  get closed(): boolean {
    return this.#closed;
  }

  /** How many streams are open, what they hold, and how many were cut for not reading. */
  stats(): EventStreamStats {
    let bufferedBytes = 0;
    for (const response of this.#streams) bufferedBytes += response.writableLength;
    return { open: this.#streams.size, bufferedBytes, stalled: this.#stalled };
  }

  /**
   * Serves one stream on `response`, whose headers it writes, from the events after `after`
   * until the client goes or the app closes. When the first event it finds is not `after + 1`
   * (its own or, later, a follower's that fell behind the retention), the events between were
   * dropped by the retention: a reset message naming the oldest kept comes first. A failure to
   * read the log ends the stream (the client resumes with Last-Event-ID). Call it only while not
   * {@link closed}: the caller answers the refusal, with the service's error envelope, before
   * taking the response.
   */
  async serve(
    response: ServerResponse,
    headers: Readonly<Record<string, string | number | readonly string[]>>,
    feed: { readonly hub: ChangeFeedHub; readonly readers: FeedReaders },
    after: number,
  ): Promise<void> {
    if (this.#closed) throw new Error("EventStreams.serve called after close");
    const { hub } = feed;
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
    try {
      while (!gone.signal.aborted && !response.destroyed && !this.#closed) {
        const live = hub.tailAfter(position, STREAM_BATCH_BYTES);
        if (live !== undefined && live.length > 0) {
          position = await this.#send(response, position, live);
        } else if (hub.isAtEnd(position)) {
          await hub.waitAfter(position, gone.signal);
        } else {
          position = await this.#replay(response, position, feed, gone.signal);
        }
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
    for (const response of this.#streams) {
      // A client that is not reading would hold the close until its stall time: cut it now.
      if (response.writableNeedDrain) response.destroy();
      else response.end();
    }
    this.#streams.clear();
  }

  // One batch read from the log during a turn, which the batch holds until every stream given it
  // has had it taken by its client. Replays at the same position share the batch and its turn:
  // two hundred streams resumed from 0 hold each batch once, and write it at once, rather than one
  // turn each in line; a stream that needs a batch nobody holds waits for a free turn, so that
  // the batches held at once are at most the turns, however far apart the streams are.
  async #replay(
    response: ServerResponse,
    position: number,
    feed: { readonly hub: ChangeFeedHub; readonly readers: FeedReaders },
    signal: AbortSignal,
  ): Promise<number> {
    let batch = this.#held.get(position);
    if (batch === undefined) {
      const release = await feed.readers.take(signal);
      if (release === undefined) return position;
      // Another stream may have taken a turn for the same batch while this one waited.
      batch = this.#held.get(position);
      if (batch !== undefined) release();
      else {
        batch = {
          messages: feed.hub.readLog(position, STREAM_BATCH_EVENTS, STREAM_BATCH_BYTES),
          holders: 0,
          release,
        };
        this.#held.set(position, batch);
      }
    }
    batch.holders++;
    try {
      const messages = await batch.messages;
      if (messages.length > 0) return await this.#send(response, position, messages);
    } finally {
      batch.holders--;
      if (batch.holders === 0) {
        if (this.#held.get(position) === batch) this.#held.delete(position);
        batch.release();
      }
    }
    // Nothing after `position` in the log (a standby behind what the hub heard of): wait for news.
    await feed.hub.waitAfter(position, signal);
    return position;
  }

  // Writes `messages` (a reset first when they do not follow `position`) a slice at a time, each
  // once the socket has taken the one before (writePaced), and answers the number of the last;
  // disconnects a client that does not take them. Sliced, a 10 MB event written to two hundred
  // streams is never one turn of the event loop spent copying it into every socket.
  async #send(response: ServerResponse, position: number, messages: readonly FeedMessage[]): Promise<number> {
    const oldest = (messages[0] as FeedMessage).number;
    const chunks = messages.flatMap((message) => message.chunks);
    if (oldest !== position + 1) chunks.unshift(Buffer.from(resetMessage(oldest)));
    // A comment written between two slices of a message would land inside its data line.
    this.#writing.add(response);
    try {
      const written = await writePaced(response, chunks, () => this.#drained(response));
      if (!written && !response.destroyed && !response.writableEnded) {
        // Counted as cut and no longer open in the same turn: its 'close' comes turns later.
        this.#stalled++;
        this.#streams.delete(response);
        response.destroy();
      }
    } finally {
      this.#writing.delete(response);
    }
    return (messages.at(-1) as FeedMessage).number;
  }

  // True once the socket has taken what it was given (or the client went); false after stallMs.
  #drained(response: ServerResponse): Promise<boolean> {
    return waitUntil(
      (settle) => {
        const taken = () => settle(true);
        response.on("drain", taken);
        response.on("close", taken);
        return () => {
          response.off("drain", taken);
          response.off("close", taken);
        };
      },
      { timeoutMs: this.#stallMs, otherwise: false },
    );
  }

  #heartbeat(): void {
    for (const response of this.#streams) {
      // A stream that cannot take more, or is writing, has not been idle.
      if (!response.writableNeedDrain && !this.#writing.has(response)) response.write(": keep-alive\n\n");
    }
  }
}
