import type { Lease, PublisherLease } from "@posts/adapters-nats";

/**
 * The arbiter of a lease in memory, standing in for the database: one holder at a time, and the
 * test can cut the holder off as if its connection had died.
 */
export class MemoryLeaseArbiter {
  #holder: { readonly name: string; readonly lost: AbortController } | undefined;

  /** The lease as relay `name` sees it. */
  leaseFor(name: string): PublisherLease {
    return {
      acquire: async (): Promise<Lease | undefined> => {
        if (this.#holder !== undefined) return undefined;
        const held = { name, lost: new AbortController() };
        this.#holder = held;
        return {
          lost: held.lost.signal,
          release: async () => {
            if (this.#holder === held) this.#holder = undefined;
          },
        };
      },
    };
  }

  holder(): string | undefined {
    return this.#holder?.name;
  }

  /** The holder's connection dies: its lease is lost and free for another. */
  cutHolder(): string | undefined {
    const held = this.#holder;
    this.#holder = undefined;
    held?.lost.abort(new Error("lease connection lost"));
    return held?.name;
  }
}

/** A lease that every caller gets at once: two relays that both believe they lead. */
export const splitBrainLease: PublisherLease = {
  acquire: async () => ({ lost: new AbortController().signal, release: async () => undefined }),
};
