import type { ListenSession } from "../../notifications/listen-session.js";
import { isDatabaseUnavailable } from "../is-database-unavailable.js";
import { sqlStateOf } from "../sql-state.js";

/** duplicate_prepared_statement, invalid_sql_statement_name: the server's prepared statements are not what `pg` believes. */
const PREPARED_REFUSALS = new Set(["42P05", "26000"]);

/**
 * Runs `text` (no parameters) on the session as the prepared statement `name`. Answers
 * `undefined` when it cannot, so that the caller uses its pool.
 */
export type PreparedOnSession = (name: string, text: string) => Promise<unknown[]> | undefined;

/**
 * Statements prepared on `session`, for the primary-position statement of the standby reads:
 * parsed once per connection and always answered by the same server process, which for a tiny
 * statement asked very often costs the server less than a pooled connection does behind a
 * pooler in transaction mode, which parses it at every execution on whichever process is free.
 * Answers `undefined` when the session is not open (it is opened for the calls to come) or has
 * refused a prepared statement; a statement that times out (`queryTimeoutMillis`, 0 for none),
 * or whose connection the server ended, drops the session at once (it reopens as a lost
 * connection does).
 */
export function positionSession(session: ListenSession, queryTimeoutMillis = 0): PreparedOnSession {
  // A server that refused a prepared statement (a pooler's session that kept an earlier
  // client's, say) would refuse the next one too: this connection runs no more of them.
  let refusedPrepared = false;
  session.use({
    opened() {
      refusedPrepared = false;
    },
  });
  return (name, text) => {
    const open = session.client;
    if (open === undefined) {
      session.openSoon();
      return undefined;
    }
    if (refusedPrepared) return undefined;
    return open
      .query({ name, text, ...(queryTimeoutMillis > 0 ? { query_timeout: queryTimeoutMillis } : {}) })
      .then(
        (result) => result.rows,
        (error: Error) => {
          // A read timeout: pg has stopped waiting for the answer, the server may not have, so
          // nothing else may be sent on this connection. A connection the server ended: dropped
          // now, not when pg reports it a moment later, so that the next call asks the pool.
          if (isDatabaseUnavailable(error)) session.fail(open, error);
          else if (PREPARED_REFUSALS.has(sqlStateOf(error) ?? "") && session.client === open)
            refusedPrepared = true;
          throw error;
        },
      );
  };
}
