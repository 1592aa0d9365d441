import { sqlStateOf } from "./sql-state.js";

// Node's codes for a connection that could not be made or was lost.
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

// SQLSTATEs outside class 08 (connection exception) that mean "not now" rather than "wrong".
const UNAVAILABLE_SQLSTATES = new Set([
  "25006", // read_only_sql_transaction: a write reached a standby or a demoted primary (failover)
  "57014", // query_canceled: statement_timeout fired
  "57P01", // admin_shutdown: the server is stopping or a DBA terminated the session
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: the server is starting
  "57P05", // idle_session_timeout
  "53300", // too_many_connections
]);

const SQLSTATE_CHECK_VIOLATION = "23514";

// What `pg` and `pg-pool` throw without a code when a connection fails, ends or cannot be had.
const DRIVER_MESSAGES = [
  /^Connection terminated/, // unexpectedly, or due to connection timeout
  /^timeout exceeded when trying to connect$/, // pool acquire timeout
  /^Query read timeout$/, // query_timeout
  /is not queryable$/, // a client that had a connection error, or was closed
  /^Cannot use a pool after calling end on the pool$/, // shutting down
  /^Commit not confirmed by a synchronous standby$/, // poolForKysely: a commit that may be lost
];

/**
 * Whether an error means the database cannot be reached or cannot answer right now, as opposed
 * to a fault in the request or the code: connection refused, reset or terminated, a DNS
 * failure, a pool acquire or connect timeout, a statement or query timeout (57014), the server
 * shutting down or starting (57P01–57P03), too many connections, every class 08 SQLSTATE, a
 * write on a server that takes none (25006, while a failover moves the write endpoint), a
 * commit whose wait for the synchronous standby was cancelled (see `poolForKysely`), and a post
 * past the last partition of posts (23514 naming no constraint; the PartitionsAhead task makes room).
 * The HTTP layer answers these with 503 and Retry-After. Looks through `cause` chains and the
 * `errors` of an `AggregateError` (Node reports each address it tried).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  return isUnavailable(error, 0);
}

/**
 * "no partition of relation ... found for row" (23514 as a check constraint's violation, but
 * naming no constraint): a post whose id is past the last partition of posts, until the
 * PartitionsAhead task makes the next ones. Told apart by the missing constraint name rather
 * than the message, which the server's lc_messages may translate.
 */
function isPastTheLastPartition(error: object): boolean {
  const { code, constraint } = error as { code?: unknown; constraint?: unknown };
  return (
    code === SQLSTATE_CHECK_VIOLATION &&
    (constraint === undefined || constraint === null || constraint === "")
  );
}

function isUnavailable(error: unknown, depth: number): boolean {
  if (typeof error !== "object" || error === null || depth > 5) return false;
  const sqlState = sqlStateOf(error);
  if (sqlState !== undefined) {
    return sqlState.startsWith("08") || UNAVAILABLE_SQLSTATES.has(sqlState) || isPastTheLastPartition(error);
  }
  const { code, message, cause, errors } = error as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === "string" && SOCKET_CODES.has(code)) return true;
  if (typeof message === "string" && DRIVER_MESSAGES.some((pattern) => pattern.test(message))) return true;
  if (Array.isArray(errors) && errors.some((inner) => isUnavailable(inner, depth + 1))) return true;
  return isUnavailable(cause, depth + 1);
}
