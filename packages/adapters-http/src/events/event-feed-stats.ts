/** What the change feed of one app holds and does at the moment of asking (GET /metrics). */
export interface EventFeedStats {
  /** Event streams open. */
  readonly streams: number;
  /** Bytes written to the streams that their sockets have not taken yet, in all. */
  readonly bufferedBytes: number;
  /** Streams disconnected since the app started because their client stopped reading. */
  readonly stalled: number;
  /** Replays and JSON pages holding a turn at reading the log. */
  readonly readersActive: number;
  /** Replays and JSON pages waiting for a turn. */
  readonly readersWaiting: number;
  /** Replays and JSON pages that have had to wait for a turn since the app started. */
  readonly readersWaited: number;
}
