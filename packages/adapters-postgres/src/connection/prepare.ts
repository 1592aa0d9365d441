import type { CompiledQuery, Kysely } from "kysely";
import type { Database } from "../schema/database.js";
import { DIRECT_STATEMENTS, type RunStatement } from "./direct-statements.js";
import { PREPARED_STATEMENT_NAMES } from "./statement-names.js";

/** Stands in for a named value while a statement is compiled; replaced at each execution. */
class Placeholder {
  constructor(readonly name: string) {}
}

/**
 * Runs a statement compiled once by {@link prepare} with this execution's values, on the
 * `Kysely` it was prepared with or, when given, on `on` (a transaction of that database).
 */
export type PreparedStatement<P, Row> = (values: P, on?: Kysely<Database>) => Promise<Row[]>;

/**
 * Compiles a statement once and answers a function that runs it with new values, so a hot path
 * pays neither for building the query tree nor for compiling it to SQL. `build` receives
 * stand-ins for the values, typed as `P`, and must put them where values go (comparisons,
 * `values`, `limit`, `sql` template slots); each one becomes a bound parameter, never SQL text.
 * Optional members of `P` serve statements built in variants: a variant that does not use a
 * value may be run without it; running one without a value it uses throws. On a PostgreSQL
 * server the statement also runs as a named prepared statement (see `StatementNames`), so the
 * server too parses it once per connection and keeps a plan where one serves every value;
 * `{ named: false }` keeps it unnamed, planned afresh for the values of every execution, for a
 * statement whose best plan depends on them so much that one plan for all could cost seconds.
 * `{ run }` sends its executions outside a transaction through `run` instead of the database's
 * own pool: the seam where a read that a hot standby may answer is routed to one.
 *
 * ```ts
 * const byId = prepare(db, (p: { id: number }) =>
 *   db.selectFrom("posts").selectAll().where("id", "=", p.id).compile());
 * const rows = await byId({ id: 7 });
 * ```
 */
export function prepare<P extends object, Row>(
  db: Kysely<Database>,
  build: (values: Required<P>) => CompiledQuery<Row>,
  options: { readonly named?: boolean; readonly run?: RunStatement | undefined } = {},
): PreparedStatement<P, Row> {
  const standIns = new Proxy(
    {},
    {
      get: (_target, name) => {
        if (typeof name !== "string") throw new TypeError("prepared statement values are named by strings");
        return new Placeholder(name);
      },
    },
  ) as Required<P>;
  const compiled = build(standIns);
  if (options.named !== false) PREPARED_STATEMENT_NAMES.register(compiled.sql);
  // For each parameter slot: the name of the value it takes (undefined for a constant), and the
  // constant compiled into it. Two flat arrays read by index: a statement's values are laid out
  // once per execution, on every GET.
  const names = compiled.parameters.map((parameter) =>
    parameter instanceof Placeholder ? parameter.name : undefined,
  );
  const constants = compiled.parameters.map((parameter) =>
    parameter instanceof Placeholder ? undefined : parameter,
  );
  const count = names.length;
  // Given a runner, through it; a database of createPostgresDatabase runs it on its pool
  // directly; a transaction, PGlite or a Kysely made elsewhere through Kysely's executor.
  const direct = options.run ?? DIRECT_STATEMENTS.get(db);
  const throughKysely = async (on: Kysely<Database>, parameters: unknown[]) =>
    (await on.executeQuery<Row>({ ...compiled, parameters })).rows;
  // Not an async function: the direct path answers the pool's own promise, one fewer per statement.
  return (values, on = db) => {
    const parameters: unknown[] = [];
    for (let i = 0; i < count; i++) {
      const name = names[i];
      if (name === undefined) {
        parameters.push(constants[i]);
        continue;
      }
      const value = (values as Record<string, unknown>)[name];
      if (value === undefined) {
        return Promise.reject(new TypeError(`prepared statement needs a value for "${name}"`));
      }
      parameters.push(value);
    }
    if (direct !== undefined && on === db) return direct(compiled.sql, parameters) as Promise<Row[]>;
    return throughKysely(on, parameters);
  };
}
