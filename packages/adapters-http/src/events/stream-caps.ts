/** The most change-feed streams one app serves at once, in all and from one client address. */
export interface StreamCapSettings {
  readonly maxStreams: number;
  readonly maxStreamsPerAddress: number;
}

/** Why a stream was refused: the app's cap or the address's. */
export type StreamCapReached = "instance" | "address";

/**
 * Counts the open change-feed streams of one app, in all and per client address, and admits a
 * new one only below both caps: a stream holds a socket and a little memory for as long as the
 * client wants, so no client may open more than its share, nor all clients together more than
 * the instance carries.
 */
export class StreamCaps {
  readonly #settings: StreamCapSettings;
  readonly #byAddress = new Map<string, number>();
  #open = 0;

  constructor(settings: StreamCapSettings) {
    this.#settings = settings;
  }

  /**
   * Admits one more stream from `address`, answering the function that ends its admission (call
   * it once, when the stream ends), or which cap refuses it.
   */
  admit(address: string): (() => void) | StreamCapReached {
    if (this.#open >= this.#settings.maxStreams) return "instance";
    const fromAddress = this.#byAddress.get(address) ?? 0;
    if (fromAddress >= this.#settings.maxStreamsPerAddress) return "address";
    this.#open++;
    this.#byAddress.set(address, fromAddress + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#open--;
      const left = (this.#byAddress.get(address) ?? 1) - 1;
      if (left === 0) this.#byAddress.delete(address);
      else this.#byAddress.set(address, left);
    };
  }

  /** How many streams are admitted now. */
  get open(): number {
    return this.#open;
  }
}
