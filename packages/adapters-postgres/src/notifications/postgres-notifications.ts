import pg from "pg";
import { isDatabaseUnavailable } from "../connection/is-database-unavailable.js";
import { sqlStateOf } from "../connection/sql-state.js";
import type { NotificationListener, Notifications } from "./notifications.js";

/** Options of {@link postgresNotifications}. */
export interface PostgresNotificationsOptions {
  readonly connectionString: string;
  readonly applicationName: string;
  /** Told of each failure of the listening connection, for the logs. */
  readonly onError?: (error: Error) => void;
  /**
   * A statement of `prepared` with no answer after this long fails, and the connection is
   * reopened (it may still be waiting for that answer). 0 means no limit. Default 0.
   */
  readonly queryTimeoutMillis?: number;
}

const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5000;
/** duplicate_prepared_statement, invalid_sql_statement_name: the server's prepared statements are not what `pg` believes. */
const PREPARED_REFUSALS = new Set(["42P05", "26000"]);

/**
 * Notifications over one connection of its own, outside the pool (a pooled connection would
 * carry its LISTEN to whoever borrows it next), opened on the first `listen` and reopened with
 * backoff whenever it fails; after a reopening every listener is told `undefined`, since what
 * was notified in between is lost. Answers the notifications, `prepared` (statements on that
 * same session) and the function that closes them.
 */
export function postgresNotifications(options: PostgresNotificationsOptions): {
  readonly notifications: Notifications;
  /**
   * Runs `text` (no parameters) on the listening session as the prepared statement `name`,
   * parsed once per connection and always answered by the same server process: for a tiny
   * statement asked very often, that costs the server less than a pooled connection does
   * behind a pooler in transaction mode, which parses it at every execution on whichever
   * process is free. Answers `undefined` when the session is not open (it is opened for the
   * calls to come) or has refused a prepared statement, so that the caller uses its pool; a
   * statement that times out, or whose connection the server ended, drops the session at once
   * (it reopens as a lost connection does).
   */
  readonly prepared: (name: string, text: string) => Promise<unknown[]> | undefined;
  readonly close: () => Promise<void>;
} {
  const listeners = new Map<string, Set<NotificationListener>>();
  let client: pg.Client | undefined;
  // A server that refused a prepared statement (a pooler's session that kept an earlier
  // client's, say) would refuse the next one too: this connection runs no more of them.
  let refusedPrepared = false;
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
    refusedPrepared = false;
    retryMs = RETRY_FIRST_MS;
    if (reopened) tellAll(undefined);
  };

  /** Opens the connection unless it is open, opening, or waiting to reopen. */
  const openSoon = () => {
    if (closed || client !== undefined || connecting !== undefined || retryTimer !== undefined) return;
    const opening = connect(listeners.size > 0).catch((error: Error) => {
      options.onError?.(error);
      reconnectLater();
    });
    connecting = opening;
    void opening.finally(() => {
      if (connecting === opening) connecting = undefined;
    });
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

  const queryTimeout = options.queryTimeoutMillis ?? 0;
  const prepared = (name: string, text: string): Promise<unknown[]> | undefined => {
    const open = client;
    if (open === undefined) {
      openSoon();
      return undefined;
    }
    if (refusedPrepared) return undefined;
    return open.query({ name, text, ...(queryTimeout > 0 ? { query_timeout: queryTimeout } : {}) }).then(
      (result) => result.rows,
      (error: Error) => {
        // A read timeout: pg has stopped waiting for the answer, the server may not have, so
        // nothing else may be sent on this connection. A connection the server ended: dropped
        // now, not when pg reports it a moment later, so that the next call asks the pool.
        if (isDatabaseUnavailable(error)) fail(open, error);
        else if (PREPARED_REFUSALS.has(sqlStateOf(error) ?? "") && client === open) refusedPrepared = true;
        throw error;
      },
    );
  };

  return {
    notifications,
    prepared,
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
