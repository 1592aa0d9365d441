import pg from "pg";
import type { ListenSession } from "./listen-session.js";
import type { NotificationListener, Notifications } from "./notifications.js";

/**
 * Notifications over `session`, a connection of its own outside the pool, opened on the first
 * `listen` and reopened with backoff whenever it fails; after a reopening every listener is told
 * `undefined`, since what was notified in between is lost.
 */
export function postgresNotifications(session: ListenSession): Notifications {
  const listeners = new Map<string, Set<NotificationListener>>();

  const tellAll = (payload: string | undefined, channel?: string) => {
    for (const [name, set] of listeners) {
      if (channel !== undefined && name !== channel) continue;
      for (const listener of set) listener(payload);
    }
  };

  session.use({
    async setUp(client) {
      client.on("notification", (message) => tellAll(message.payload ?? "", message.channel));
      for (const channel of listeners.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    },
    opened(reopened) {
      if (reopened) tellAll(undefined);
    },
    holdsState: () => listeners.size > 0,
  });

  return {
    async listen(channel, listener) {
      let set = listeners.get(channel);
      const isNew = set === undefined;
      if (set === undefined) {
        set = new Set();
        listeners.set(channel, set);
      }
      set.add(listener);
      // A connection opened now listens on every channel already; one open before does not know this one.
      const open = await session.openNow();
      if (isNew && open !== undefined) await open.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      return async () => {
        set.delete(listener);
      };
    },
  };
}
