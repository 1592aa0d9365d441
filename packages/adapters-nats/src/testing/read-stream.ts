import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { STREAM_NAME } from "../posts-stream.js";

/** One message of the stream, as a consumer would see it. */
export interface StreamMessage {
  readonly sequence: number;
  readonly subject: string;
  /** The `Nats-Msg-Id` header: the event's number. */
  readonly id: string | undefined;
  readonly body: string;
}

/**
 * Every message of the stream `POSTS` on the server at `url`, in stream order; empty when the
 * stream does not exist. Reads each sequence from the first to the last one.
 */
export async function readStream(url: string): Promise<StreamMessage[]> {
  const connection = await connect({ servers: url, maxReconnectAttempts: 0 });
  try {
    const manager = await jetstreamManager(connection);
    const names = await manager.streams.names().next();
    if (!names.includes(STREAM_NAME)) return [];
    const { state } = await manager.streams.info(STREAM_NAME);
    const messages: StreamMessage[] = [];
    if (state.messages === 0) return messages;
    for (let from = state.first_seq; from <= state.last_seq; from += 100) {
      const sequences = Array.from({ length: Math.min(100, state.last_seq - from + 1) }, (_, i) => from + i);
      const stored = await Promise.all(
        sequences.map((seq) => manager.streams.getMessage(STREAM_NAME, { seq })),
      );
      for (const message of stored) {
        if (message === null) continue;
        messages.push({
          sequence: message.seq,
          subject: message.subject,
          id: message.header?.get("Nats-Msg-Id") || undefined,
          body: message.string(),
        });
      }
    }
    return messages;
  } finally {
    await connection.close();
  }
}
