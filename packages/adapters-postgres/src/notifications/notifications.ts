/**
 * What a listener of a notification channel is told: the payload of one `NOTIFY`, or
 * `undefined` when notifications may have been missed (the listening connection was lost and
 * is back), so that the listener checks for itself what it would have heard.
 */
export type NotificationListener = (payload: string | undefined) => void;

/**
 * PostgreSQL's `LISTEN`/`NOTIFY` on an open database: a `NOTIFY` (or `pg_notify`) is delivered
 * when its transaction commits, never when it rolls back, to every listener in every process.
 */
export interface Notifications {
  /**
   * Listens on `channel` from the moment the answer resolves, and answers the function that
   * stops. Several listeners may share a channel.
   */
  listen(channel: string, listener: NotificationListener): Promise<() => Promise<void>>;
}
