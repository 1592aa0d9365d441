import type { RunStatement } from "../direct-statements.js";
import { READ_TIMEOUT } from "../pool-for-kysely.js";

/**
 * The runner of the primary-position statement: on `session` (a connection of its own that
 * keeps the statement prepared; it answers `undefined` while it cannot take one), else on
 * `pool`. A statement the session failed for any other reason than the primary's silence is
 * asked again of the pool (the session was lost, the primary may well answer); one that
 * timed out is not, since asking again would double the wait of every read behind it, and
 * a primary that does not answer is the standby reads' own case (a standby answers as of its
 * last replayed change).
 */
export function positionRunner(
  session: (sql: string) => Promise<unknown[]> | undefined,
  pool: RunStatement,
): RunStatement {
  return (sql, parameters) => {
    const onSession = parameters.length === 0 ? session(sql) : undefined;
    if (onSession === undefined) return pool(sql, parameters);
    return onSession.catch((error: unknown) => {
      if (error instanceof Error && error.message === READ_TIMEOUT) throw error;
      return pool(sql, parameters);
    });
  };
}
