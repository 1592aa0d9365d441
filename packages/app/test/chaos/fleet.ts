import type { ListeningService } from "../support/service-process.js";
import { startService } from "../support/service-process.js";

const PUBLISHES = "event relay: this instance publishes the events to NATS";
const LOST = "event relay: the publisher lease was lost; standing by";

/**
 * The instances running right now, on one database: the requests of the test's clients go to
 * any of them; the test kills some and starts others in their place.
 */
export class Fleet {
  readonly #env: Record<string, string>;
  readonly #live: ListeningService[];
  /** Every instance ever started here, dead or alive, for the cleanup. */
  readonly started: ListeningService[] = [];

  constructor(instances: readonly ListeningService[], env: Record<string, string>) {
    this.#live = [...instances];
    this.#env = env;
  }

  /** The base URL of a live instance picked at random. */
  url(): string {
    const instance = this.#live[Math.floor(Math.random() * this.#live.length)];
    if (instance === undefined) throw new Error("no instance is running");
    return instance.url;
  }

  live(): readonly ListeningService[] {
    return this.#live;
  }

  /** The live instance whose relay publishes now, if one has said so. */
  publisher(): ListeningService | undefined {
    const publishing = this.#live.filter((instance) => {
      const said = instance.logs.filter((line) => line.msg === PUBLISHES || line.msg === LOST);
      return said.at(-1)?.msg === PUBLISHES;
    });
    if (publishing.length > 1) throw new Error(`${publishing.length} live instances say they publish`);
    return publishing[0];
  }

  /** Kills `victim` with SIGKILL (no shutdown of any kind) and takes it out of the rotation. */
  async kill(victim: ListeningService): Promise<void> {
    this.#live.splice(this.#live.indexOf(victim), 1);
    await victim.kill();
  }

  /** Starts one more instance with the fleet's environment and puts it in the rotation. */
  async add(): Promise<ListeningService> {
    const instance = await startService(this.#env);
    this.started.push(instance);
    this.#live.push(instance);
    return instance;
  }
}
