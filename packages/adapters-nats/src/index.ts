export {
  type JetStreamRelay,
  type JetStreamRelayOptions,
  type RelayStatus,
  STREAM_NAME,
  SUBJECTS,
  startJetStreamRelay,
} from "./jetstream-relay.js";
export type {
  Lease,
  PublisherLease,
  RelayEventLog,
  RelayedEvent,
  RelayedEventType,
  RelayLogger,
} from "./ports.js";
