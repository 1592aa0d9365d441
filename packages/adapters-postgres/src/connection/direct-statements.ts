import type { Kysely } from "kysely";
import type { Database } from "../schema/database.js";

/**
 * Runs one statement with its parameters on a connection of its own, answering the rows. Without
 * parameters the text may hold several statements (run as one implicit transaction): the rows
 * are then those of the last one that answered any.
 */
export type RunStatement = (sql: string, parameters: readonly unknown[]) => Promise<unknown[]>;

/**
 * For each `Kysely` that `createPostgresDatabase` made: how to run a statement on its pool
 * without Kysely's executor. `prepare()` runs its statements this way outside transactions.
 * Why: Kysely's executor (connection provider, query id, result transformation, the promises
 * between them) is a measurable share of a GET's CPU; the statement, its connection, its read timer
 * and its name are the same.
 */
export const DIRECT_STATEMENTS = new WeakMap<Kysely<Database>, RunStatement>();
