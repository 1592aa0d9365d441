/**
 * What the relay needs from the rest of the service, declared here rather than imported: the
 * slice of the event log it reads and the lease that makes one instance the publisher. The app
 * hands it the real ones; tests hand it fakes.
 */

/** The kinds of change the relay publishes, each to its own subject. */
export type RelayedEventType = "post.created" | "post.updated" | "post.deleted";

/** One committed event as the relay publishes it. */
export interface RelayedEvent {
  /** The event's place in the service's one sequence: 1, 2, 3, … with no gap and no repeat. */
  readonly number: number;
  readonly type: RelayedEventType;
  /** The CloudEvent, serialized as JSON; published as is when the NATS server takes its size. */
  readonly body: string;
  /**
   * The CloudEvent without its payload, pointing to where it is kept (a claim check, such as the
   * `dataref` extension): published instead of `body` when `body` is larger than the server's
   * `max_payload`. Without it, such an event is refused by the client, and the relay retries it
   * (and holds back every event after it) until the server takes larger messages.
   */
  readonly reference?: () => string;
}

/** The part of the event log the relay reads. */
export interface RelayEventLog {
  /**
   * The committed events numbered above `after`, in order, at most `limit` of them; the first
   * retained ones when `after` precedes them. Rejects when the log cannot be read (the relay
   * retries).
   */
  readAfter(after: number, limit: number): Promise<readonly RelayedEvent[]>;
  /**
   * Resolves once events numbered above `after` may exist (at once when they already do), or
   * when `signal` aborts (resolving or rejecting: both are fine). May resolve early; the relay
   * reads and asks again. The relay calls it after each batch shorter than its batch size as
   * well, instead of reading again, so a late resolve delays every event after such a batch.
   */
  waitForNew(after: number, signal: AbortSignal): Promise<void>;
}

/**
 * Held by at most one process at a time, for as long as that process is alive and connected.
 * adapters-postgres's publisher-lease.ts declares the same shapes in its own words, as adapters
 * never import one another; the app hands its lease to the relay, so the compiler checks they agree.
 */
export interface Lease {
  /** Aborts when the lease is lost (its holder's connection to the arbiter died). */
  readonly lost: AbortSignal;
  /** Gives the lease up so another process may take it. Idempotent. */
  release(): Promise<void>;
}

/** Where the relays of all instances compete for the right to publish. */
export interface PublisherLease {
  /**
   * Takes the lease when no other process holds it; `undefined` when another does. Rejects when
   * the arbiter cannot be reached (the relay retries).
   */
  acquire(): Promise<Lease | undefined>;
}

/** Where the relay writes what it does; pino's logger fits. */
export interface RelayLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}
