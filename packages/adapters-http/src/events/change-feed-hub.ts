import type { ChangeEventLog, PostChangeEvent } from "@posts/domain";
import type { CloudEventRenderer } from "./cloud-event.js";
import { type FeedMessage, feedMessageInSlices } from "./feed-message.js";
import { waitUntil } from "./wait-until.js";

/** Options of {@link ChangeFeedHub}. */
export interface ChangeFeedHubOptions {
  readonly log: ChangeEventLog;
  readonly render: CloudEventRenderer;
  /** Told of a failed read of the log, which is retried. */
  readonly onError?: (error: unknown) => void;
}

// The newest messages kept for the readers at the end of the feed: enough for a burst, and
// bounded in bytes, since one event may carry a post of megabytes (the newest is kept whatever
// its size, so that every follower can be given it).
const TAIL_EVENTS = 1000;
const TAIL_BYTES = 8 * 1024 * 1024;
// One read of the log by the hub: bounded in bytes too, so that a burst of large posts is read
// one bounded batch at a time.
const FILL_EVENTS = 500;
const FILL_BYTES = 1024 * 1024;
const RETRY_MS = 1000;
/** The most bytes of messages the hub keeps of batches that replays read, for the next replays. */
export const REPLAY_CACHE_BYTES = 32 * 1024 * 1024;

/** A batch replays share: its messages, being read or read, and their bytes once read (0 before). */
interface SharedBatch {
  readonly messages: Promise<readonly FeedMessage[]>;
  bytes: number;
}

/**
 * What every reader of one instance's feed shares, so that a thousand streams at the end of the
 * feed cost one read of the log per new batch of events, not a thousand. It hears of new numbers
 * from the log's subscription, reads the new events once, renders them once, and keeps the newest
 * in a bounded tail that readers at the end take from; a reader further behind reads the log
 * itself. While nobody waits at the end, a new number costs nothing but remembering it.
 */
export class ChangeFeedHub {
  readonly #options: ChangeFeedHubOptions;
  #tail: FeedMessage[] = [];
  #tailBytes = 0;
  // Every event up to #readTo has been read (the tail ends there, or is empty); #known is the
  // newest number heard of.
  #readTo = 0;
  #known = 0;
  readonly #waiters = new Map<() => void, number>();
  #filling = false;
  #retry: NodeJS.Timeout | undefined;
  #stop: (() => void) | undefined;
  // Oldest first (a Map keeps insertion order; a batch asked for again moves to the end).
  readonly #batches = new Map<string, SharedBatch>();
  #batchBytes = 0;

  constructor(options: ChangeFeedHubOptions) {
    this.#options = options;
  }

  /**
   * Subscribes to the log: from then on the hub hears, within a notification's delay, of every
   * number newer than what a reader has read from the log.
   */
  start(): void {
    this.#stop ??= this.#options.log.subscribe((last) => {
      if (last > this.#known) this.#known = last;
      if (this.#waiters.size > 0) this.#fill();
    });
  }

  /** Unsubscribes, and releases every waiter. */
  stop(): void {
    this.#stop?.();
    this.#stop = undefined;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    for (const wake of this.#waiters.keys()) wake();
    this.#waiters.clear();
  }

  /** The newest number of the log (read from it, not from what the hub has heard). */
  async lastNumber(): Promise<number> {
    const last = await this.#options.log.lastNumber();
    if (last > this.#known) this.#known = last;
    return last;
  }

  /**
   * The messages after `after` the hub holds, as few as `maxBytes` allows after the first (the
   * followers' path: the messages are shared, never read or rendered again); `undefined` when the
   * hub does not hold the next one (the reader is at the end, see {@link isAtEnd}, or behind the
   * tail, and reads the log with {@link readLog}).
   */
  tailAfter(after: number, maxBytes: number): readonly FeedMessage[] | undefined {
    const first = this.#tail[0];
    if (first === undefined || after < first.number - 1 || after >= this.#readTo) return undefined;
    const messages: FeedMessage[] = [];
    let bytes = 0;
    for (let i = after - first.number + 1; i < this.#tail.length && bytes < maxBytes; i++) {
      const message = this.#tail[i] as FeedMessage;
      messages.push(message);
      bytes += message.byteLength;
    }
    return messages;
  }

  /**
   * Whether the hub has heard of nothing after `after`: a reader there waits ({@link waitAfter})
   * and costs no query, and the notification of anything newer wakes it.
   */
  isAtEnd(after: number): boolean {
    return after >= this.#known && after >= this.#readTo;
  }

  /**
   * The events after `after` read from the log, at most `limit` and bounded by `maxBytes` as
   * `ChangeEventLog.readAfter` bounds them, as messages: for a reader behind the tail. Empty
   * exactly when `after` is at or past the log's newest number. Replays from one point share one
   * read: a batch being read, or read lately (up to {@link REPLAY_CACHE_BYTES} of them), is
   * answered to every reader asking for it, so that two hundred streams resumed from 0 read and
   * render each event once, and hold its bytes once.
   */
  readLog(after: number, limit: number, maxBytes: number): Promise<readonly FeedMessage[]> {
    const key = `${after}/${limit}/${maxBytes}`;
    const shared = this.#batches.get(key);
    if (shared !== undefined) {
      // The newest asked for is the last evicted.
      this.#batches.delete(key);
      this.#batches.set(key, shared);
      return shared.messages;
    }
    const messages = this.#options.log.readAfter(after, limit, maxBytes).then(async (events) => {
      const messages: FeedMessage[] = [];
      for (const event of events) messages.push(await feedMessageInSlices(event, this.#options.render));
      return messages;
    });
    const entry: SharedBatch = { messages, bytes: 0 };
    this.#batches.set(key, entry);
    messages.then(
      (read) => {
        if (this.#batches.get(key) !== entry) return;
        // An empty batch is the end as it was: a later read may find more.
        if (read.length === 0) {
          this.#batches.delete(key);
          return;
        }
        entry.bytes = read.reduce((sum, message) => sum + message.byteLength, 0);
        this.#batchBytes += entry.bytes;
        this.#evictBatches();
      },
      () => {
        if (this.#batches.get(key) === entry) this.#batches.delete(key);
      },
    );
    return messages;
  }

  /**
   * Resolves once there may be events after `after` (a reader calls it after `read` answered
   * none), or when `signal` aborts or the hub stops.
   */
  waitAfter(after: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted || after < this.#readTo) return Promise.resolve();
    return waitUntil(
      (settle) => {
        const wake = () => settle(undefined);
        this.#waiters.set(wake, after);
        if (this.#known > after) this.#fill();
        return () => this.#waiters.delete(wake);
      },
      { signal, otherwise: undefined },
    );
  }

  #wakeBelow(readTo: number): void {
    for (const [wake, after] of this.#waiters) if (after < readTo) wake();
  }

  #fill(): void {
    if (this.#filling) return;
    // Set before the loop starts, not from its promise: a loop with nothing to read ends before
    // its first await, and its `finally` would then run before the promise was stored, leaving
    // the hub marked as filling for good and every waiter at its end asleep while the JSON pages stayed right.
    this.#filling = true;
    void this.#fillUntilDone();
  }

  // The loop's last check and its `finally` run in one go (no await between): a waiter that
  // registers after the check finds the hub no longer filling and starts it again.
  async #fillUntilDone(): Promise<void> {
    try {
      while (this.#waiters.size > 0 && this.#known > this.#readTo) {
        // Nobody waiting needs what precedes the lowest waiter: start there, not further back.
        const lowest = Math.min(...this.#waiters.values());
        if (lowest > this.#readTo) {
          this.#readTo = lowest;
          this.#tail = [];
          this.#tailBytes = 0;
          if (this.#known <= this.#readTo) break;
        }
        const events = await this.#options.log.readAfter(this.#readTo, FILL_EVENTS, FILL_BYTES);
        if (events.length === 0) break;
        // A gap means the retention went past the tail: it starts again from what there is.
        if ((events[0] as PostChangeEvent).number !== this.#readTo + 1) {
          this.#tail = [];
          this.#tailBytes = 0;
        }
        const messages: FeedMessage[] = [];
        for (const event of events) messages.push(await feedMessageInSlices(event, this.#options.render));
        for (const message of messages) this.#append(message);
        this.#readTo = (events.at(-1) as PostChangeEvent).number;
        if (this.#readTo > this.#known) this.#known = this.#readTo;
        this.#wakeBelow(this.#readTo);
      }
    } catch (error) {
      this.#options.onError?.(error);
      this.#retry ??= setTimeout(() => {
        this.#retry = undefined;
        if (this.#waiters.size > 0) this.#fill();
      }, RETRY_MS);
      this.#retry.unref();
    } finally {
      this.#filling = false;
    }
  }

  // Evicts the least lately asked for of the batches read until they fit (a batch larger than the
  // whole bound goes at once: its readers hold it until their clients have taken it).
  #evictBatches(): void {
    for (const [key, entry] of this.#batches) {
      if (this.#batchBytes <= REPLAY_CACHE_BYTES) return;
      // Still being read: it counts nothing yet.
      if (entry.bytes === 0) continue;
      this.#batches.delete(key);
      this.#batchBytes -= entry.bytes;
    }
  }

  #append(message: FeedMessage): void {
    this.#tail.push(message);
    this.#tailBytes += message.byteLength;
    while (this.#tail.length > TAIL_EVENTS || (this.#tailBytes > TAIL_BYTES && this.#tail.length > 1)) {
      this.#tailBytes -= (this.#tail.shift() as FeedMessage).byteLength;
    }
  }
}
