import pg from "pg";
import type { NotificationListener, Notifications } from "./notifications.js";

/** Options of {@link postgresNotifications}. */
export interface PostgresNotificationsOptions {
  readonly connectionString: string;
  readonly applicationName: string;
  /** Told of each failure of the listening connection, for the logs. */
  readonly onError?: (error: Error) => void;
}

const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5000;

/**
 * Notifications over one connection of its own, outside the pool (a pooled connection would
 * carry its LISTEN to whoever borrows it next), opened on the first `listen` and reopened with
 * backoff whenever it fails; after a reopening every listener is told `undefined`, since what
 * was notified in between is lost. Answers the notifications and the function that closes them.
 */
export function postgresNotifications(options: PostgresNotificationsOptions): {
  readonly notifications: Notifications;
  readonly close: () => Promise<void>;
} {
  const listeners = new Map<string, Set<NotificationListener>>();
  let client: pg.Client | undefined;
  let connecting: Promise<void> | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let retryMs = RETRY_FIRST_MS;
  let closed = false;

  const tellAll = (payload: string | undefined, channel?: string) => {
    for (const [name, set] of listeners) {
      if (channel !== undefined && name !== channel) continue;
      for (const listener of set) listener(payload);
    }
  };

  const connect = async (reopened: boolean): Promise<void> => {
    const next = new pg.Client({
      connectionString: options.connectionString,
      application_name: options.applicationName,
      keepAlive: true,
    });
    next.on("notification", (message) => tellAll(message.payload ?? "", message.channel));
    next.on("error", (error) => fail(next, error));
    next.on("end", () => fail(next, new Error("the listening connection ended")));
    try {
      await next.connect();
      for (const channel of listeners.keys()) await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (error) {
      next.removeAllListeners("end");
      next.on("error", () => {});
      await next.end().catch(() => {});
      throw error;
    }
    if (closed) {
      await next.end().catch(() => {});
      return;
    }
    client = next;
    retryMs = RETRY_FIRST_MS;
    if (reopened) tellAll(undefined);
  };

  const reconnectLater = () => {
    if (closed || retryTimer !== undefined) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connecting = connect(true).catch((error: Error) => {
        options.onError?.(error);
        retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
        reconnectLater();
      });
      connecting.finally(() => {
        connecting = undefined;
      });
    }, retryMs);
    retryTimer.unref();
  };

  function fail(which: pg.Client, error: Error) {
    if (client !== which) return;
    client = undefined;
    which.removeAllListeners("end");
    which.on("error", () => {});
    which.end().catch(() => {});
    if (closed) return;
    options.onError?.(error);
    reconnectLater();
  }

  const notifications: Notifications = {
    async listen(channel, listener) {
      let set = listeners.get(channel);
      const isNew = set === undefined;
      if (set === undefined) {
        set = new Set();
        listeners.set(channel, set);
      }
      set.add(listener);
      if (connecting !== undefined) await connecting.catch(() => {});
      if (client === undefined && retryTimer === undefined) {
        connecting = connect(false);
        try {
          await connecting;
        } catch (error) {
          // The first connection failing is reported as the reconnections' would be; the caller
          // hears `undefined` once one succeeds.
          options.onError?.(error as Error);
          reconnectLater();
        } finally {
          connecting = undefined;
        }
      } else if (isNew && client !== undefined) {
        await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      }
      return async () => {
        set.delete(listener);
      };
    },
  };

  return {
    notifications,
    async close() {
      closed = true;
      if (retryTimer !== undefined) clearTimeout(retryTimer);
      await connecting?.catch(() => {});
      const last = client;
      client = undefined;
      if (last !== undefined) {
        last.removeAllListeners("end");
        last.on("error", () => {});
        await last.end().catch(() => {});
      }
    },
  };
}
