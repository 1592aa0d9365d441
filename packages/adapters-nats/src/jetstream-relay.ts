import { setTimeout as sleep } from "node:timers/promises";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { connect } from "@nats-io/transport-node";
import type { PublisherLease, RelayEventLog, RelayedEvent, RelayLogger } from "./ports.js";
import { type StreamEnd, streamEnd } from "./posts-stream.js";
import { publishBatch } from "./publish-batch.js";
import { waitUntil } from "./wait-until.js";

/** How to reach NATS and what to relay; only `servers`, `events` and `lease` are required. */
export interface JetStreamRelayOptions {
  /** The NATS server(s), e.g. `nats://127.0.0.1:4222` (`NATS_URL`); a comma list is accepted. */
  readonly servers: string | readonly string[];
  readonly events: RelayEventLog;
  readonly lease: PublisherLease;
  readonly logger?: RelayLogger;
  /** Events read from the log and published per round, pipelined. Default 256. */
  readonly batchSize?: number;
  /** Longest wait for one publish's acknowledgement. Default 5000 ms. */
  readonly publishTimeoutMs?: number;
  /**
   * How often a relay without the lease tries to take it. Default 1000 ms; a relay that has just
   * lost the lease waits twice as long, so that a standby takes over.
   */
  readonly leaseRetryMs?: number;
  /** First and longest pause after a failure (NATS or the log not answering). Defaults 100 and 2000 ms. */
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number };
  /** Longest idle wait before the log is read again even without a wake-up. Default 5000 ms. */
  readonly idleRecheckMs?: number;
  /**
   * Replicas of the stream `POSTS` when the relay creates it: 3 on a three-node JetStream
   * cluster, so that the loss of any one node loses no event; 1 on a single server, which takes
   * no more. Default {@link defaultStreamReplicas} of `servers`. A stream found with fewer is
   * kept, with a warning.
   */
  readonly streamReplicas?: number;
  /** How often the connection pings its server; two pings unanswered and it moves to another. Default 2000 ms. */
  readonly pingIntervalMs?: number;
}

/** The servers of a `servers` option, a comma list or an array. */
function serverList(servers: string | readonly string[]): string[] {
  return typeof servers === "string" ? servers.split(",").map((s) => s.trim()) : [...servers];
}

/**
 * The replicas of the stream `POSTS` when `servers` is all that is known of the cluster: 3 when
 * it names three servers or more (a JetStream cluster, where R3 survives the loss of one node),
 * else 1 (a single server refuses more).
 */
export function defaultStreamReplicas(servers: string | readonly string[]): number {
  return serverList(servers).length >= 3 ? 3 : 1;
}

/**
 * Connects to `servers` as the relay does: reconnecting forever, to any of them, and pinging
 * every `pingIntervalMs` (default 2000), so that a server that stops answering without closing
 * the connection (a paused process, a partition) is left within about two intervals instead of
 * nats.js's default of minutes.
 */
export function connectToNats(
  servers: string | readonly string[],
  options: { readonly timeoutMs: number; readonly pingIntervalMs?: number },
): Promise<NatsConnection> {
  return connect({
    servers: serverList(servers),
    name: "posts-event-relay",
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    timeout: options.timeoutMs,
    pingInterval: options.pingIntervalMs ?? 2000,
    maxPingOut: 2,
    // Otherwise every publish builds two Error objects up front (their stack traces only
    // serve a failure's message): that was a third of the relay's CPU per event. A failed
    // publish is still reported, with the server's reason, just without the caller's stack.
    noAsyncTraces: true,
  });
}

/** What a relay is doing; for logs, health checks and tests. */
export interface RelayStatus {
  /** `publisher` while it holds the lease, `standby` while another instance does. */
  readonly role: "standby" | "publisher" | "stopped";
  /** Events this relay has seen acknowledged by the stream (duplicates included) since it started. */
  readonly acknowledged: number;
  /** The number of the last event this relay knows to be in the stream. */
  readonly lastEvent: number | undefined;
}

/** A running relay. */
export interface JetStreamRelay {
  status(): RelayStatus;
  /** Stops publishing, closes the NATS connection and gives the lease up. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts relaying the event log to the JetStream stream `POSTS` in the background; returns at
 * once, even when NATS or the lease's arbiter does not answer yet.
 *
 * Only the holder of the lease publishes. The stream itself says where to resume: on taking the
 * lease, and after any failure, the relay reads the stream's last message and its `Nats-Msg-Id`
 * (the event's number) and publishes the events after it. Each publish carries that id AND the
 * stream sequence it must follow (`expect.lastSequence`), so the stream only ever grows by the
 * next event: a retry inside the duplicate window is answered as a duplicate, a retry after it
 * is refused for its stale sequence, and two publishers that both believe they lead cannot
 * interleave. Stream sequences are not event numbers (a stream created after events were
 * pruned from the log starts at the oldest retained one), so only the id is trusted.
 */
export function startJetStreamRelay(options: JetStreamRelayOptions): JetStreamRelay {
  const relay = new Relay(options);
  const done = relay.run();
  return {
    status: () => relay.status(),
    stop: async () => {
      relay.stop();
      await done;
    },
  };
}

class Relay {
  readonly #options: JetStreamRelayOptions;
  readonly #stopping = new AbortController();
  readonly #batchSize: number;
  readonly #publishTimeoutMs: number;
  #role: RelayStatus["role"] = "standby";
  #acknowledged = 0;
  #lastEvent: number | undefined;
  #connection: NatsConnection | undefined;

  constructor(options: JetStreamRelayOptions) {
    this.#options = options;
    this.#batchSize = options.batchSize ?? 256;
    this.#publishTimeoutMs = options.publishTimeoutMs ?? 5000;
  }

  status(): RelayStatus {
    return { role: this.#role, acknowledged: this.#acknowledged, lastEvent: this.#lastEvent };
  }

  stop(): void {
    this.#stopping.abort();
    // Publishes waiting for a NATS that stopped answering fail now rather than at their timeout.
    this.#connection?.close().catch(() => undefined);
  }

  async run(): Promise<void> {
    const stopping = this.#stopping.signal;
    let failures = 0;
    while (!stopping.aborted) {
      let lease: Awaited<ReturnType<PublisherLease["acquire"]>>;
      try {
        lease = await this.#options.lease.acquire();
        failures = 0;
      } catch (error) {
        this.#log("warn", { err: error }, "event relay: the publisher lease cannot be asked for; retrying");
        await this.#pause(failures++);
        continue;
      }
      if (lease === undefined) {
        await this.#pause(undefined, this.#options.leaseRetryMs ?? 1000);
        continue;
      }
      this.#role = "publisher";
      this.#log("info", {}, "event relay: this instance publishes the events to NATS");
      try {
        await this.#lead(AbortSignal.any([stopping, lease.lost]));
      } finally {
        this.#role = stopping.aborted ? "stopped" : "standby";
        await lease.release().catch(() => undefined);
      }
      if (!stopping.aborted) {
        this.#log("warn", {}, "event relay: the publisher lease was lost; standing by");
        // A connection that just died may die again: let a standby instance take over first.
        await this.#pause(undefined, 2 * (this.#options.leaseRetryMs ?? 1000));
      }
    }
    this.#role = "stopped";
    await this.#connection?.close().catch(() => undefined);
    this.#connection = undefined;
  }

  /** Publishes while `leading` holds, starting over from the stream's end after each failure. */
  async #lead(leading: AbortSignal): Promise<void> {
    let failures = 0;
    while (!leading.aborted) {
      try {
        const connection = await this.#connect();
        const manager = await jetstreamManager(connection, { timeout: this.#publishTimeoutMs });
        const replicas = this.#options.streamReplicas ?? defaultStreamReplicas(this.#options.servers);
        const end = await streamEnd(manager, this.#options.logger, replicas);
        this.#lastEvent = end.event;
        await this.#pump(connection, end, leading, () => {
          failures = 0;
        });
      } catch (error) {
        if (leading.aborted) return;
        this.#log(
          failures === 0 ? "warn" : "error",
          { err: error, attempt: failures + 1 },
          "event relay: publishing failed; resuming from the stream's last message",
        );
        await this.#pause(failures++, undefined, leading);
      }
    }
  }

  /** Reads and publishes the events after `end` until `leading` aborts or a publish fails. */
  async #pump(
    connection: NatsConnection,
    end: StreamEnd,
    leading: AbortSignal,
    progressed: () => void,
  ): Promise<void> {
    let { sequence, event } = end;
    while (!leading.aborted) {
      const batch = await this.#options.events.readAfter(event, this.#batchSize);
      if (batch.length === 0) {
        await this.#waitForNew(event, leading);
        continue;
      }
      const first = batch[0] as RelayedEvent;
      if (first.number !== event + 1 && event !== 0) {
        // Only when the relay was stopped longer than the log keeps events: say so loudly.
        this.#log(
          "error",
          { after: event, next: first.number },
          "event relay: events were pruned from the log before they were published; the stream skips them",
        );
      }
      // Pipelined on one connection, which the server reads in order; each publish names the
      // exact sequence it must follow, so a refusal anywhere refuses everything after it.
      await publishBatch(connection, batch, sequence, leading, this.#publishTimeoutMs);
      sequence += batch.length;
      event = (batch[batch.length - 1] as RelayedEvent).number;
      this.#lastEvent = event;
      this.#acknowledged += batch.length;
      progressed();
      // A short batch read the log to its end: what follows is known only once it is numbered,
      // so wait for that (at once if it already is) rather than spend a read on finding nothing.
      if (batch.length < this.#batchSize) await this.#waitForNew(event, leading);
    }
  }

  /**
   * Waits until the log may hold events after `after`, `leading` aborts, or the idle recheck is
   * due; `leading` lives as long as the lease, so the wait must leave nothing in it (`waitUntil`).
   */
  async #waitForNew(after: number, leading: AbortSignal): Promise<void> {
    const wait = new AbortController();
    await waitUntil(
      (settle) => {
        void this.#options.events
          .waitForNew(after, wait.signal)
          .catch(() => undefined)
          .then(() => settle(undefined));
        // However the wait ended, the log's own wait ends too and drops what it holds.
        return () => wait.abort();
      },
      { signal: leading, timeoutMs: this.#options.idleRecheckMs ?? 5000, otherwise: undefined },
    );
  }

  /** The connection, opened on first need; it reconnects by itself forever once open. */
  async #connect(): Promise<NatsConnection> {
    if (this.#connection !== undefined && !this.#connection.isClosed()) return this.#connection;
    this.#connection = await connectToNats(this.#options.servers, {
      timeoutMs: this.#publishTimeoutMs,
      ...(this.#options.pingIntervalMs === undefined ? {} : { pingIntervalMs: this.#options.pingIntervalMs }),
    });
    return this.#connection;
  }

  /** Waits out a failure (doubling with jitter from `failures`) or `fixedMs`; ends early on stop. */
  async #pause(failures: number | undefined, fixedMs?: number, signal?: AbortSignal): Promise<void> {
    const initial = this.#options.backoff?.initialMs ?? 100;
    const max = this.#options.backoff?.maxMs ?? 2000;
    const ms =
      fixedMs ?? Math.min(max, initial * 2 ** Math.min(failures ?? 0, 16)) * (0.5 + Math.random() / 2);
    await sleep(ms, undefined, { signal: signal ?? this.#stopping.signal }).catch(() => undefined);
  }

  #log(level: "info" | "warn" | "error", details: object, message: string): void {
    this.#options.logger?.[level](details, message);
  }
}
