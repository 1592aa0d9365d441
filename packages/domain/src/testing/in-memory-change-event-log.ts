import type { ChangeEventLog } from "../ports/change-event-log.js";
import type { Post } from "../post.js";
import { changeEventTextBytes, type PostChangeEvent } from "../post-change-event.js";

/** A change as the store records it, before it has its number. */
export type RecordedChange =
  | { readonly type: "post.created" | "post.updated"; readonly post: Post; readonly occurredAt: Date }
  | { readonly type: "post.deleted"; readonly postId: number; readonly occurredAt: Date };

interface Entry {
  readonly event: PostChangeEvent;
  readonly numberedAt: number;
}

/**
 * A `ChangeEventLog` held in memory, with the behaviour the contract suite demands of the
 * database's. The store that makes a change records it with {@link InMemoryChangeEventLog.record}
 * at the moment it makes it (nothing here can roll back), and the event is numbered at once;
 * subscribers hear of it in a later microtask, as they would after a commit.
 */
export class InMemoryChangeEventLog implements ChangeEventLog {
  readonly #entries: Entry[] = [];
  readonly #listeners = new Set<(lastNumber: number) => void>();
  readonly #now: () => Date;
  #last = 0;

  /** `now` stamps when each event is numbered, for `deleteNumberedBefore`; the system clock by default. */
  constructor(now: () => Date = () => new Date()) {
    this.#now = now;
  }

  /** Numbers `change` as the next event and tells the subscribers. */
  record(change: RecordedChange): void {
    const number = ++this.#last;
    const event: PostChangeEvent =
      change.type === "post.deleted"
        ? { type: change.type, number, postId: change.postId, occurredAt: new Date(change.occurredAt) }
        : {
            type: change.type,
            number,
            postId: change.post.id,
            occurredAt: new Date(change.occurredAt),
            post: change.post,
          };
    this.#entries.push({ event, numberedAt: this.#now().getTime() });
    queueMicrotask(() => {
      for (const listener of this.#listeners) listener(this.#last);
    });
  }

  async readAfter(
    after: number,
    limit: number,
    maxBytes = Number.POSITIVE_INFINITY,
  ): Promise<readonly PostChangeEvent[]> {
    const first = this.#entries[0]?.event.number ?? 1;
    const start = Math.max(0, Math.floor(after) + 1 - first);
    const events: PostChangeEvent[] = [];
    let bytes = 0;
    for (const entry of this.#entries.slice(start, start + limit)) {
      if (bytes >= maxBytes) break;
      events.push(entry.event);
      bytes += changeEventTextBytes(entry.event);
    }
    return events;
  }

  async lastNumber(): Promise<number> {
    return this.#last;
  }

  subscribe(listener: (lastNumber: number) => void): () => void {
    // Wrapped, so that one function subscribed twice is two subscriptions: the port's promise, kept
    // in these same lines by PostgresChangeEventLog, as production code may not import this kit.
    const own = (last: number) => listener(last);
    this.#listeners.add(own);
    return () => {
      this.#listeners.delete(own);
    };
  }

  async deleteNumberedBefore(before: Date): Promise<number> {
    let count = 0;
    while (this.#entries.length > 1 && (this.#entries[0] as Entry).numberedAt < before.getTime()) {
      this.#entries.shift();
      count++;
    }
    return count;
  }
}
