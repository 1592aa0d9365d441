import type { RelayEventLog } from "@posts/adapters-nats";
import { startJetStreamRelay } from "@posts/adapters-nats";
import { embeddedPublisherLease, PostgresPublisherLease } from "@posts/adapters-postgres";
import type { Logger } from "pino";
import type { AppConfig } from "../config.js";

/** A running relay of the change events to NATS, and how to stop it. */
export interface RunningEventRelay {
  /** Stops publishing, closes the NATS connection and gives the publisher lease back. */
  stop(): Promise<void>;
}

/**
 * Starts relaying `events` to NATS JetStream when `NATS_URL` is set (otherwise answers
 * `undefined`). The instances sharing a PostgreSQL database elect one publisher through an
 * advisory lock held on a connection of its own; on the embedded database this process is the
 * only instance and always publishes. Returns at once: NATS need not answer for the service to
 * start, and events wait in the log until it does.
 */
export function startEventRelay(
  config: AppConfig,
  events: RelayEventLog,
  logger: Logger,
): RunningEventRelay | undefined {
  if (config.NATS_URL === undefined) return undefined;
  const lease =
    config.DATABASE_URL === undefined
      ? undefined
      : new PostgresPublisherLease({
          // A session advisory lock: it needs a session of its own, as LISTEN does.
          connectionString: config.DATABASE_LISTEN_URL ?? config.DATABASE_URL,
          connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
        });
  const relay = startJetStreamRelay({
    servers: config.NATS_URL,
    ...(config.NATS_STREAM_REPLICAS === undefined ? {} : { streamReplicas: config.NATS_STREAM_REPLICAS }),
    events,
    lease: lease ?? embeddedPublisherLease,
    logger: logger.child({ component: "event-relay" }),
  });
  return {
    stop: async () => {
      await relay.stop();
      await lease?.close();
    },
  };
}
