import { setTimeout as sleep } from "node:timers/promises";
import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import {
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  PubHeaders,
  StorageType,
} from "@nats-io/jetstream";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { connect, headers } from "@nats-io/transport-node";
import type { PublisherLease, RelayEventLog, RelayedEvent, RelayedEventType, RelayLogger } from "./ports.js";
import { waitUntil } from "./wait-until.js";

/** The stream the relay writes to, created when absent. */
export const STREAM_NAME = "POSTS";

/** The subject of each kind of event; the stream captures `posts.events.*`. */
export const SUBJECTS: Readonly<Record<RelayedEventType, string>> = {
  "post.created": "posts.events.created",
  "post.updated": "posts.events.updated",
  "post.deleted": "posts.events.deleted",
};

const MSG_ID_HEADER = PubHeaders.MsgIdHdr;

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

/** Where the stream stored a publish (or had stored it before, for a duplicate). */
interface PublishAck {
  readonly seq: number;
}

/** The stream's answer to one publish; throws what the stream refused, as `js.publish` would. */
function parseAck(reply: Msg): PublishAck {
  // 503 without a body: no stream captures the subject (it was deleted under the relay).
  if (reply.headers?.code === 503) throw new Error(`no stream captures the subjects of ${STREAM_NAME}`);
  const ack = reply.json<{
    seq?: number;
    error?: ConstructorParameters<typeof JetStreamApiError>[0];
  }>();
  if (ack.error !== undefined) throw new JetStreamApiError(ack.error);
  if (typeof ack.seq !== "number")
    throw new Error(`the stream's acknowledgement has no sequence: ${reply.string()}`);
  return { seq: ack.seq };
}

/**
 * `promise`, or a rejection with `signal`'s reason as soon as it aborts; the listener is removed
 * either way, so a long-lived signal collects none.
 */
async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  const outcome = await waitUntil<PromiseSettledResult<T> | undefined>(
    (settle) => {
      void Promise.allSettled([promise]).then(([result]) => settle(result));
      return undefined;
    },
    { signal, otherwise: undefined },
  );
  if (outcome === undefined) throw signal.reason ?? new Error("no longer the publisher");
  if (outcome.status === "rejected") throw outcome.reason;
  return outcome.value;
}

/** Where the stream ends: its last sequence and the event stored there (0 and 0 when empty). */
interface StreamEnd {
  readonly sequence: number;
  readonly event: number;
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
        const end = await this.#streamEnd(manager);
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
      await this.#publishBatch(connection, batch, sequence, leading);
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

  /**
   * Publishes `batch` in order, the first after stream sequence `after`, each message naming the
   * sequence it must follow, and resolves once the stream holds the whole batch at sequences
   * `after + 1` to `after + batch.length`. Rejects when the stream refused a message, when an
   * acknowledgement is not answered within the publish timeout, when the connection closes, or
   * when `leading` aborts.
   *
   * Only the first and the last message ask for an acknowledgement. The stream stores a message
   * only when its last sequence is the one the message names, so the chain holds or breaks as a
   * whole: once one message is refused (or skipped as a duplicate), every later one names a
   * sequence the stream does not end at and is refused too, and the last one's acknowledgement
   * carries the refusal. A last message stored at `after + batch.length` therefore means that
   * every sequence before it was filled in order; by this relay or, when two relays briefly both
   * lead, by the other, which publishes the same events at the same sequences (each event's
   * sequence is its number plus the stream's fixed offset). The first message's acknowledgement
   * is asked for the reason a batch fails: after any failure the relay starts again from the
   * stream's end, so the message refused for a cause of its own (too large for the stream, say)
   * is then the first of a batch, and its refusal is what the log says.
   *
   * An acknowledgement per message, as `js.publish` asks, makes the NATS server build, and the
   * relay receive, parse and match, one reply per event; without them (and with the bodies
   * encoded by `Buffer.from`) the NATS server spends two fifths less CPU per event and the relay
   * a fifth less (bench/RESULTS.md#events). Core publishes are used, not `js.publish`, for the
   * same protocol without a request's timer, promise and inbox entry per event.
   */
  async #publishBatch(
    connection: NatsConnection,
    batch: readonly RelayedEvent[],
    after: number,
    leading: AbortSignal,
  ): Promise<void> {
    const last = batch.length - 1;
    const acknowledgements: Promise<Msg>[] = [];
    for (const [index, item] of batch.entries()) {
      const header = headers();
      header.set(MSG_ID_HEADER, String(item.number));
      header.set(PubHeaders.ExpectedStreamHdr, STREAM_NAME);
      header.set(PubHeaders.ExpectedLastSeqHdr, String(after + index));
      const subject = SUBJECTS[item.type];
      // Buffer.from is about twice as fast as the TextEncoder the client would otherwise use.
      const body = Buffer.from(item.body, "utf8");
      if (index === 0 || index === last) {
        const acknowledged = connection.request(subject, body, {
          headers: header,
          timeout: this.#publishTimeoutMs,
        });
        // Observed at once: a rejection is handled even when an abort ends the wait first.
        acknowledged.catch(() => undefined);
        acknowledgements.push(acknowledged);
      } else {
        connection.publish(subject, body, { headers: header });
      }
    }
    const replies = await untilAborted(Promise.all(acknowledgements), leading);
    const expected = last === 0 ? [after + 1] : [after + 1, after + batch.length];
    for (const [index, reply] of replies.entries()) {
      const { seq } = parseAck(reply);
      if (seq !== expected[index]) {
        // A duplicate stored elsewhere than next: the stream is not what this relay read.
        const number = (batch[index === 0 ? 0 : last] as RelayedEvent).number;
        throw new Error(`event ${number} is at stream sequence ${seq}, expected ${expected[index]}`);
      }
    }
  }

  /** Creates the stream when absent, then reads which event its last message is. */
  async #streamEnd(manager: JetStreamManager): Promise<StreamEnd> {
    const info = await this.#streamInfo(manager);
    if (info.config.storage !== StorageType.File) {
      this.#log(
        "warn",
        { storage: info.config.storage },
        `event relay: stream ${STREAM_NAME} is not on disk`,
      );
    }
    const sequence = info.state.last_seq;
    if (sequence === 0) return { sequence: 0, event: 0 };
    const last = await manager.streams.getMessage(STREAM_NAME, { seq: sequence });
    const id = last?.header?.get(MSG_ID_HEADER) ?? "";
    if (!/^[1-9]\d*$/.test(id)) {
      // Publishing on would be guessing: every later event would be a duplicate or a gap.
      throw new Error(
        `the last message of stream ${STREAM_NAME} (sequence ${sequence}) is gone or has no event number ` +
          `in ${MSG_ID_HEADER}; keep the stream's limits from removing its newest message`,
      );
    }
    return { sequence, event: Number(id) };
  }

  async #streamInfo(manager: JetStreamManager): Promise<StreamInfo> {
    try {
      return await manager.streams.info(STREAM_NAME);
    } catch (error) {
      if (!(error instanceof JetStreamApiError) || error.code !== JetStreamApiCodes.StreamNotFound)
        throw error;
      this.#log("info", {}, `event relay: creating stream ${STREAM_NAME} (file storage)`);
      return await manager.streams.add({
        name: STREAM_NAME,
        subjects: ["posts.events.*"],
        storage: StorageType.File,
      });
    }
  }

  /** The connection, opened on first need; it reconnects by itself forever once open. */
  async #connect(): Promise<NatsConnection> {
    if (this.#connection !== undefined && !this.#connection.isClosed()) return this.#connection;
    const servers = this.#options.servers;
    this.#connection = await connect({
      servers: typeof servers === "string" ? servers.split(",").map((s) => s.trim()) : [...servers],
      name: "posts-event-relay",
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      timeout: this.#publishTimeoutMs,
      // Otherwise every publish builds two Error objects up front (their stack traces only
      // serve a failure's message): that was a third of the relay's CPU per event. A failed
      // publish is still reported, with the server's reason, just without the caller's stack.
      noAsyncTraces: true,
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
