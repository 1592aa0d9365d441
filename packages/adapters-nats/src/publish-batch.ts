import { JetStreamApiError, PubHeaders } from "@nats-io/jetstream";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { headers } from "@nats-io/transport-node";
import type { RelayedEvent } from "./ports.js";
import { MSG_ID_HEADER, STREAM_NAME, SUBJECTS } from "./posts-stream.js";
import { waitUntil } from "./wait-until.js";

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
 * Room kept for a message's headers under the server's `max_payload`, which counts them with the
 * body: the four headers set here take about 150 bytes.
 */
const HEADER_ROOM_BYTES = 1024;

/**
 * The bytes published for `item`: its body, or its reference when the body would not fit in
 * `maxPayload` (the connected server's, unknown before it has said) and the event has one.
 * Without a reference, the client refuses the body, as the server would.
 */
function bodyOf(item: RelayedEvent, maxPayload: number | undefined): Buffer {
  // Buffer.from is about twice as fast as the TextEncoder the client would otherwise use.
  const body = Buffer.from(item.body, "utf8");
  if (maxPayload === undefined || item.reference === undefined) return body;
  return body.length + HEADER_ROOM_BYTES <= maxPayload ? body : Buffer.from(item.reference(), "utf8");
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

/**
 * Publishes `batch` in order, the first after stream sequence `after`, each message naming the
 * sequence it must follow, and resolves once the stream holds the whole batch at sequences
 * `after + 1` to `after + batch.length`. Rejects when the stream refused a message, when an
 * acknowledgement is not answered within `publishTimeoutMs`, when the connection closes, or
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
export async function publishBatch(
  connection: NatsConnection,
  batch: readonly RelayedEvent[],
  after: number,
  leading: AbortSignal,
  publishTimeoutMs: number,
): Promise<void> {
  const last = batch.length - 1;
  const acknowledgements: Promise<Msg>[] = [];
  for (const [index, item] of batch.entries()) {
    const header = headers();
    header.set(MSG_ID_HEADER, String(item.number));
    header.set(PubHeaders.ExpectedStreamHdr, STREAM_NAME);
    header.set(PubHeaders.ExpectedLastSeqHdr, String(after + index));
    const subject = SUBJECTS[item.type];
    const body = bodyOf(item, connection.info?.max_payload);
    if (index === 0 || index === last) {
      const acknowledged = connection.request(subject, body, {
        headers: header,
        timeout: publishTimeoutMs,
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
