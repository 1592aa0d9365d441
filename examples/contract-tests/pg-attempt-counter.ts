import type { AttemptCount, AttemptCounter } from "@posts/domain";
import pg from "pg";

const INCREMENT = `INSERT INTO attempts AS a VALUES ($1, 1, $2::timestamptz + $3::float8 * interval '1 millisecond')
  ON CONFLICT (key) DO UPDATE SET count = CASE WHEN a.reset_at <= $2 THEN 1 ELSE a.count + 1 END,
    reset_at = CASE WHEN a.reset_at <= $2 THEN excluded.reset_at ELSE a.reset_at END
  RETURNING key, count, reset_at`;

type Row = { key: string; count: number; reset_at: Date };
const countOf = (row: Row): AttemptCount => ({ count: row.count, resetAt: row.reset_at });

/**
 * An `AttemptCounter` of our own in SQL, on the PostgreSQL server of `url`: one row per key, its
 * window decided by the row's own insert-or-update, so that concurrent increments queue on it.
 */
export async function pgAttemptCounter(url: string) {
  const pool = new pg.Pool({ connectionString: url });
  await pool.query(
    "CREATE TABLE IF NOT EXISTS attempts (key text PRIMARY KEY, count int, reset_at timestamptz)",
  );
  const rows = async (sql: string, values: unknown[]) => (await pool.query<Row>(sql, values)).rows;
  const counter: AttemptCounter = {
    increment: async (key, windowMs, now) => countOf((await rows(INCREMENT, [key, now, windowMs]))[0]!),
    read: async (keys, now) => {
      const running = await rows("SELECT * FROM attempts WHERE key = ANY($1) AND reset_at > $2", [keys, now]);
      return new Map(running.map((row) => [row.key, countOf(row)]));
    },
    deleteExpired: async (now) =>
      (await pool.query("DELETE FROM attempts WHERE reset_at <= $1", [now])).rowCount ?? 0,
  };
  return { counter, close: (): Promise<void> => pool.end() };
}
