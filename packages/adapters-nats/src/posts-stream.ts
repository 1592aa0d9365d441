import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import { JetStreamApiCodes, JetStreamApiError, PubHeaders, StorageType } from "@nats-io/jetstream";
import type { RelayedEventType, RelayLogger } from "./ports.js";

/** The stream the relay writes to, created when absent. */
export const STREAM_NAME = "POSTS";

/** The subject of each kind of event; the stream captures `posts.events.*`. */
export const SUBJECTS: Readonly<Record<RelayedEventType, string>> = {
  "post.created": "posts.events.created",
  "post.updated": "posts.events.updated",
  "post.deleted": "posts.events.deleted",
};

/** The header that carries each message's event number, by which the stream also drops duplicates. */
export const MSG_ID_HEADER = PubHeaders.MsgIdHdr;

/** Where the stream ends: its last sequence and the event stored there (0 and 0 when empty). */
export interface StreamEnd {
  readonly sequence: number;
  readonly event: number;
}

/**
 * Where the stream ends: creates the stream when absent (file storage, `replicas` copies; with a
 * warning when it is found elsewhere or with fewer), then reads which event its last message is.
 * Throws when that message is gone or has no event number.
 */
export async function streamEnd(
  manager: JetStreamManager,
  logger: RelayLogger | undefined,
  replicas = 1,
): Promise<StreamEnd> {
  const info = await streamInfo(manager, logger, replicas);
  if (info.config.storage !== StorageType.File) {
    logger?.warn({ storage: info.config.storage }, `event relay: stream ${STREAM_NAME} is not on disk`);
  }
  if (info.config.num_replicas < replicas) {
    logger?.warn(
      { replicas: info.config.num_replicas, wanted: replicas },
      `event relay: stream ${STREAM_NAME} has fewer replicas than asked for; the loss of a node may lose events`,
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

/** The stream's information, creating it when absent. */
async function streamInfo(
  manager: JetStreamManager,
  logger: RelayLogger | undefined,
  replicas: number,
): Promise<StreamInfo> {
  try {
    return await manager.streams.info(STREAM_NAME);
  } catch (error) {
    if (!(error instanceof JetStreamApiError) || error.code !== JetStreamApiCodes.StreamNotFound) throw error;
    logger?.info({ replicas }, `event relay: creating stream ${STREAM_NAME} (file storage)`);
    return await manager.streams.add({
      name: STREAM_NAME,
      subjects: ["posts.events.*"],
      storage: StorageType.File,
      num_replicas: replicas,
    });
  }
}
