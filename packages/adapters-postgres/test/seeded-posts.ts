import type { Database } from "@posts/adapters-postgres";
import { type CompiledQuery, Kysely, PostgresDialect } from "kysely";
import pg from "pg";

/** Every node of an EXPLAIN (FORMAT JSON) plan, depth first. */
export function nodesOf(plan: { Plans?: unknown[] } & Record<string, unknown>): Record<string, unknown>[] {
  return [plan, ...(plan.Plans ?? []).flatMap((child) => nodesOf(child as typeof plan))];
}

/**
 * A pool of one connection of its own on a test database (none of the service's statement or
 * read timeouts) and a Kysely on it that records every statement it runs, as it runs it.
 */
export interface ObservedDatabase {
  readonly pool: pg.Pool;
  readonly db: Kysely<Database>;
  readonly captured: CompiledQuery[];
  /** The plan of a captured statement, with its values; run as well when `analyze`. */
  plan(statement: CompiledQuery, analyze?: boolean): Promise<Record<string, unknown>[]>;
  destroy(): Promise<void>;
}

/** Opens an {@link ObservedDatabase}; `destroy` closes its pool. */
export function observedDatabase(connectionString: string): ObservedDatabase {
  const captured: CompiledQuery[] = [];
  const pool = new pg.Pool({ connectionString, max: 1 });
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === "query") captured.push(event.query);
    },
  });
  return {
    pool,
    db,
    captured,
    plan: async (statement, analyze = false) => {
      const explained = await pool.query<{ "QUERY PLAN": [{ Plan: Record<string, unknown> }] }>(
        `EXPLAIN (${analyze ? "ANALYZE, " : ""}FORMAT JSON) ${statement.sql}`,
        [...statement.parameters],
      );
      return nodesOf(explained.rows[0]?.["QUERY PLAN"][0].Plan ?? {});
    },
    destroy: () => db.destroy(),
  };
}

/**
 * Fills an empty test database: `users` users, then `posts` posts made oldest first from
 * g = 1 to `posts`, whose title and content are the SQL expressions of `g` given, by user
 * 1 + g % `users`. Then VACUUM ANALYZE, as autovacuum would: statistics, and the GIN pending
 * lists merged into the trigram indexes (the planner prices a long pending list, which every
 * index scan reads, above a table scan). Answers the posts' ids, oldest first.
 */
export async function seedPosts(
  pool: pg.Pool,
  seed: { readonly users: number; readonly posts: number; readonly title: string; readonly content: string },
): Promise<number[]> {
  await pool.query(`
    INSERT INTO users (email, password_hash, created_at)
    SELECT 'user' || g || '@example.com', 'hash', now() FROM generate_series(1, ${seed.users}) AS g`);
  await pool.query(`
    INSERT INTO posts (title, content, created_at, updated_at, user_id)
    SELECT ${seed.title}, ${seed.content}, now(), now(), 1 + g % ${seed.users}
      FROM generate_series(1, ${seed.posts}) AS g`);
  await pool.query("VACUUM ANALYZE posts");
  const { rows } = await pool.query<{ id: string }>("SELECT id FROM posts ORDER BY id");
  return rows.map((row) => Number(row.id));
}
