export {
  connectToNats,
  defaultStreamReplicas,
  type JetStreamRelay,
  type JetStreamRelayOptions,
  type RelayStatus,
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
export { STREAM_NAME, SUBJECTS } from "./posts-stream.js";
