import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";

/** What the proxy does with connections right now. */
export type ProxyState = "forwarding" | "refusing" | "blackholing";

/** A client connection and its connection to the target, once there is one. */
interface Link {
  readonly client: Socket;
  upstream: Socket | undefined;
  /** Whether bytes flow; piping twice would send every byte twice. */
  piped: boolean;
}

/**
 * A TCP proxy on 127.0.0.1 in front of one target at a time (a PostgreSQL server), whose faults the test
 * decides: it can refuse connections like a stopped server, swallow every byte like a network
 * partition, or cut the connections it carries like a crash, and then heal. It keeps its port
 * across faults, so the pool under test never has to be told about them.
 */
export class TcpProxy {
  readonly #server: Server;
  #target: { readonly host: string; readonly port: number };
  readonly #links = new Set<Link>();
  #state: ProxyState = "forwarding";
  #port = 0;
  #loseNextAnswer = false;
  #answerLost: (() => void) | undefined;

  private constructor(target: { readonly host: string; readonly port: number }) {
    this.#target = target;
    this.#server = createServer((client) => this.#accept(client));
  }

  /** Listens on a free port of 127.0.0.1 and forwards to `target`. */
  static async start(target: { readonly host: string; readonly port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(target);
    await proxy.#listen(0);
    return proxy;
  }

  get port(): number {
    return this.#port;
  }

  get state(): ProxyState {
    return this.#state;
  }

  /** `url` (a `postgres://` URL) with its host and port replaced by this proxy's. */
  proxied(url: string): string {
    const proxied = new URL(url);
    proxied.hostname = "127.0.0.1";
    proxied.port = String(this.#port);
    return proxied.toString();
  }

  /** The local ports of the connections to the target: `client_port` in `pg_stat_activity`. */
  upstreamPorts(): number[] {
    return [...this.#links].flatMap((link) => link.upstream?.localPort ?? []);
  }

  /** How many client connections the proxy carries. */
  get connections(): number {
    return this.#links.size;
  }

  /** A stopped server: the port refuses connections and those that were open are reset. */
  async refuse(): Promise<void> {
    this.#state = "refusing";
    // close() stops accepting at once; its callback would wait for the open connections.
    if (this.#server.listening) this.#server.close();
    this.cut();
  }

  /**
   * A network partition: connections are accepted and kept, but nothing passes in either
   * direction until {@link restore}; what was sent meanwhile then arrives, as after TCP
   * retransmission.
   */
  blackhole(): void {
    this.#state = "blackholing";
    for (const link of this.#links) {
      link.client.unpipe();
      link.upstream?.unpipe();
      link.client.pause();
      link.upstream?.pause();
      link.piped = false;
    }
  }

  /** A crash of the connections in place: every open connection is reset, both sides. */
  cut(): void {
    for (const link of this.#links) {
      link.client.resetAndDestroy();
      link.upstream?.resetAndDestroy();
    }
    this.#links.clear();
  }

  /**
   * A lost answer: requests still reach the target, but the first bytes the target sends back
   * next, on any connection, are dropped and that connection is reset on both sides, as when
   * the network fails after the target has done the work. Then it forwards as before. Resolves
   * once an answer has been lost.
   */
  loseNextAnswer(): Promise<void> {
    this.#loseNextAnswer = true;
    for (const link of this.#links) {
      if (!link.piped) continue;
      link.upstream?.unpipe(link.client);
      this.#dropFirstAnswer(link);
    }
    return new Promise((resolve) => {
      this.#answerLost = resolve;
    });
  }

  /**
   * A write endpoint that follows the primary, as HAProxy does in a failover: every connection
   * open to the old target is reset, and new ones go to `target`.
   */
  moveTo(target: { readonly host: string; readonly port: number }): void {
    this.#target = target;
    this.cut();
  }

  /** Forwards again, on the same port: reopens it if it was refusing, releases held bytes. */
  async restore(): Promise<void> {
    const previous = this.#state;
    this.#state = "forwarding";
    if (previous === "refusing") await this.#listen(this.#port);
    for (const link of this.#links) if (!link.piped) this.#forward(link);
  }

  /** Stops listening and resets every connection. */
  async close(): Promise<void> {
    this.#state = "refusing";
    this.cut();
    if (this.#server.listening) await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(port, "127.0.0.1", () => {
        this.#server.off("error", reject);
        resolve();
      });
    });
    const address = this.#server.address();
    if (typeof address !== "object" || address === null) throw new Error("the proxy has no TCP address");
    this.#port = address.port;
  }

  #accept(client: Socket): void {
    if (this.#state === "refusing") {
      client.resetAndDestroy();
      return;
    }
    const link: Link = { client, upstream: undefined, piped: false };
    this.#links.add(link);
    const drop = () => {
      this.#links.delete(link);
      client.destroy();
      link.upstream?.destroy();
    };
    client.on("error", drop);
    client.on("close", drop);
    if (this.#state === "blackholing") client.pause();
    else this.#forward(link);
  }

  /** Until an answer is lost, `link`'s answers are watched; the first to come, on any link, is dropped with its connection. */
  #dropFirstAnswer(link: Link): void {
    const { client, upstream } = link;
    upstream?.once("data", (chunk: Buffer) => {
      if (!this.#loseNextAnswer) {
        client.write(chunk);
        upstream.pipe(client);
        return;
      }
      this.#loseNextAnswer = false;
      client.resetAndDestroy();
      upstream.resetAndDestroy();
      this.#links.delete(link);
      this.#answerLost?.();
      this.#answerLost = undefined;
    });
    upstream?.resume();
  }

  /** Connects `link` to the target if it is not yet, and pipes both ways. */
  #forward(link: Link): void {
    if (link.upstream === undefined) {
      const upstream = tcpConnect(this.#target.port, this.#target.host);
      link.upstream = upstream;
      const drop = () => {
        this.#links.delete(link);
        link.client.destroy();
        upstream.destroy();
      };
      upstream.on("error", drop);
      upstream.on("close", drop);
    }
    link.client.pipe(link.upstream);
    if (this.#loseNextAnswer) this.#dropFirstAnswer(link);
    else link.upstream.pipe(link.client);
    link.client.resume();
    link.upstream.resume();
    link.piped = true;
  }
}
