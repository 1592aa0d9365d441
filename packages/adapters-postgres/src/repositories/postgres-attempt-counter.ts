import type { AttemptCount, AttemptCounter } from "@posts/domain";
import { type Kysely, sql } from "kysely";
import { type PreparedStatement, prepare } from "../connection/prepare.js";
import type { Database } from "../schema/database.js";

interface IncrementValues {
  readonly key: string;
  /** Both instants as ISO 8601 strings: what a `timestamptz` parameter is sent as. */
  readonly now: string;
  readonly resetAt: string;
}

interface CountRow {
  readonly key: string;
  readonly count: number;
  readonly reset_at: Date;
}

/**
 * `AttemptCounter` on PostgreSQL (a server through `pg`, or PGlite), in the `attempt_counts`
 * table, so that every instance of the service counts the same attempts and a restart forgets
 * none. Each method is one statement, compiled once when the counter is made, and holds no
 * transaction open: an increment is one upsert, atomic at READ COMMITTED because PostgreSQL
 * locks the conflicting row and evaluates the update against its latest committed version.
 */
export class PostgresAttemptCounter implements AttemptCounter {
  readonly #increment: PreparedStatement<IncrementValues, Omit<CountRow, "key">>;
  readonly #read: PreparedStatement<{ keys: readonly string[]; now: string }, CountRow>;
  readonly #deleteExpired: PreparedStatement<{ now: string }, { readonly deleted: number }>;

  constructor(db: Kysely<Database>) {
    // An ended window (reset_at <= now) starts over at 1 with the new end; a running one counts up.
    this.#increment = prepare(db, (p: IncrementValues) => {
      const ended = sql<boolean>`attempt_counts.reset_at <= ${p.now}::timestamptz`;
      return db
        .insertInto("attempt_counts")
        .values({ key: p.key, count: 1, reset_at: p.resetAt })
        .onConflict((conflict) =>
          conflict.column("key").doUpdateSet({
            count: sql<number>`CASE WHEN ${ended} THEN 1 ELSE attempt_counts.count + 1 END`,
            reset_at: sql<string>`CASE WHEN ${ended} THEN excluded.reset_at ELSE attempt_counts.reset_at END`,
          }),
        )
        .returning(["count", "reset_at"])
        .compile();
    });
    // One statement for any number of keys: the two of a login cost one round trip.
    this.#read = prepare(db, (p: { keys: readonly string[]; now: string }) =>
      db
        .selectFrom("attempt_counts")
        .select(["key", "count", "reset_at"])
        .where(sql<boolean>`key = ANY(${p.keys}::text[])`)
        .where("reset_at", ">", sql<Date>`${p.now}::timestamptz`)
        .compile(),
    );
    // Counted in the database: the sweep needs the number, not the rows.
    this.#deleteExpired = prepare(db, (p: { now: string }) =>
      db
        .with("deleted", (deleted) =>
          deleted
            .deleteFrom("attempt_counts")
            .where("reset_at", "<=", sql<Date>`${p.now}::timestamptz`)
            .returning("key"),
        )
        .selectFrom("deleted")
        .select((eb) => eb.fn.countAll<number>().as("deleted"))
        .compile(),
    );
  }

  async increment(key: string, windowMs: number, now: Date): Promise<AttemptCount> {
    const [row] = await this.#increment({
      key,
      now: now.toISOString(),
      resetAt: new Date(now.getTime() + windowMs).toISOString(),
    });
    if (row === undefined) throw new Error("the attempt count upsert returned no row");
    return { count: row.count, resetAt: row.reset_at };
  }

  async read(keys: readonly string[], now: Date): Promise<ReadonlyMap<string, AttemptCount>> {
    if (keys.length === 0) return new Map();
    const rows = await this.#read({ keys, now: now.toISOString() });
    return new Map(rows.map((row) => [row.key, { count: row.count, resetAt: row.reset_at }]));
  }

  async deleteExpired(now: Date): Promise<number> {
    const [row] = await this.#deleteExpired({ now: now.toISOString() });
    return row?.deleted ?? 0;
  }
}
