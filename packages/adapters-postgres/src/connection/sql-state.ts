// Five characters; no SQLSTATE class starts with "E", which keeps out Node codes such as EPIPE.
const SQLSTATE = /^[0-9A-DF-Z][0-9A-Z]{4}$/;

/**
 * The SQLSTATE of a PostgreSQL error, or `undefined` for anything else. Both `pg` and PGlite
 * put it in `code`; Node's socket errors also have a `code` (`ECONNREFUSED`), which is not one.
 */
export function sqlStateOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  const { code } = error;
  return typeof code === "string" && SQLSTATE.test(code) ? code : undefined;
}

/** The SQLSTATEs this adapter turns into domain answers. */
export const SQLSTATE_FOREIGN_KEY_VIOLATION = "23503";
export const SQLSTATE_UNIQUE_VIOLATION = "23505";
