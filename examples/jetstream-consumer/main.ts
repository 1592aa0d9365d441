/**
 * A program that follows the service's change events from the JetStream stream POSTS through a
 * durable consumer of its own: it applies each event (here: appends it to a file, its state),
 * then acknowledges it. Stopped or crashed, it resumes where its consumer's acknowledgements
 * left off; an event delivered again (applied but not yet acknowledged, or published twice) is
 * recognised by its id and only acknowledged. One event in flight at a time keeps them in order.
 * An event larger than the NATS server's max_payload comes as a reference: `data` holds the
 * post's id only, and `dataref` names the service's feed page that holds the whole event (read
 * it from the service when the post's content is needed).
 *
 * NATS_URL: the servers, comma-separated (default nats://127.0.0.1:4222).
 * CONSUMER: the durable consumer's name (default posts-example).
 * STATE_FILE: where the applied events go, one JSON line each (default applied-events.jsonl).
 */
import { appendFileSync, existsSync, readFileSync, truncateSync } from "node:fs";
import { AckPolicy, type Consumer, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, nanos } from "@nats-io/transport-node";
import type { PostEvent } from "@posts/client";

const servers = (process.env.NATS_URL ?? "nats://127.0.0.1:4222").split(",");
const durable = process.env.CONSUMER ?? "posts-example";
const stateFile = process.env.STATE_FILE ?? "applied-events.jsonl";

// The state: every event applied so far. A line cut short by a crash was never acknowledged, so
// it is dropped here and its event, delivered again, is applied again.
const applied = new Set<string>();
if (existsSync(stateFile)) {
  const text = readFileSync(stateFile, "utf8");
  const whole = text.slice(0, text.lastIndexOf("\n") + 1);
  if (whole.length < text.length) truncateSync(stateFile, Buffer.byteLength(whole));
  for (const line of whole.split("\n").filter(Boolean)) applied.add((JSON.parse(line) as PostEvent).id);
}

// Connects and reconnects for ever, to any server of the list, and gives up on a server that does
// not answer (frozen, partitioned) within seconds, where the defaults would wait for minutes.
const connection = await connect({
  servers,
  waitOnFirstConnect: true,
  maxReconnectAttempts: -1,
  reconnectTimeWait: 500,
  timeout: 2_000,
  pingInterval: 2_000,
  maxPingOut: 2,
});
// No account check: while a server is lost, JetStream's API may not answer for seconds.
const manager = await jetstreamManager(connection, { checkAPI: false });
// Made once, found again on a restart with the acknowledgements it holds (the same config is no
// change); asked again until JetStream answers, which it may not while it elects new leaders.
let consumer: Consumer;
for (;;) {
  try {
    await manager.consumers.add("POSTS", {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      // The next event is delivered only once this one is acknowledged: in order, through redeliveries.
      max_ack_pending: 1,
      // An acknowledgement lost with a server is made good by a redelivery after this long.
      ack_wait: nanos(5_000),
    });
    consumer = await jetstream(connection).consumers.get("POSTS", durable);
    break;
  } catch (error) {
    console.error(`JetStream did not answer yet: ${(error as Error).message}`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}
console.log(`following POSTS as ${durable}; ${applied.size} events applied before`);

const messages = await consumer.consume({ max_messages: 1, expires: 5_000 });
process.once("SIGTERM", () => void messages.close());
for await (const message of messages) {
  const event = message.json<PostEvent>();
  if (applied.has(event.id)) {
    console.log(`event ${event.id} again (stream sequence ${message.seq}): acknowledged, not applied`);
  } else {
    appendFileSync(stateFile, `${JSON.stringify(event)}\n`);
    applied.add(event.id);
  }
  // Not confirmed (a server lost meanwhile): the event comes again, and is recognised above.
  await message.ackAck().catch(() => false);
}
await connection.drain();
console.log(`stopped after ${applied.size} events`);
