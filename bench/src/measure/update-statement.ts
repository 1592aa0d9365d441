/**
 * One UPDATE statement for every post update against the eight variants the repository compiled
 * (a new title or not, a new content or not, expected versions or not), on PostgreSQL: each form
 * runs as named prepared statements on one connection, on a table of 100,000 posts, in interleaved
 * rounds over the same mix of the eight cases, and prints the PostgreSQL backend's CPU time (from
 * /proc, so the server must run on this machine) and the wall time per statement of each round,
 * and both forms' plans (EXPLAIN ANALYZE of the generic plan). Not part of `pnpm bench`:
 * `node --import tsx bench/src/measure/update-statement.ts postgres://postgres@127.0.0.1:5432/postgres`.
 */
import pg from "pg";
import { createFallbackSchema, recreateDatabase, seed, withDatabase } from "../load/database.js";
import { processCpu } from "../servers/server-process.js";

const DATABASE = "posts_bench_update_statement";
const USERS = 1000;
const POSTS = 100_000;
const PER_ROUND = 3000;
const ROUNDS = 12;

/**
 * The statement as the repository writes it, for the parts `parts` says are there, its
 * parameters numbered $1 id, $2 title, $3 content, $4 now, $5 author, $6 versions (a variant's
 * unused ones are left out and the rest renumbered by {@link numbered}).
 */
function updateText(parts: { title: boolean; content: boolean; conditional: boolean } | "single"): string {
  const single = parts === "single";
  const assignments = single
    ? ["title = COALESCE($2::text, p.title)", "content = COALESCE($3::text, p.content)"]
    : [...(parts.title ? ["title = $2::text"] : []), ...(parts.content ? ["content = $3::text"] : [])];
  assignments.push("updated_at = GREATEST($4::timestamptz, p.updated_at + interval '1 millisecond')");
  const versionCheck = single
    ? "AND ($6::timestamptz[] IS NULL OR p.updated_at = ANY($6::timestamptz[]))"
    : parts.conditional
      ? "AND p.updated_at = ANY($6::timestamptz[])"
      : "";
  return `
    WITH target AS (
      SELECT id, user_id, updated_at FROM posts WHERE id = $1
    ), updated AS (
      UPDATE posts AS p SET ${assignments.join(", ")}
      FROM target
      WHERE p.id = target.id AND target.user_id = $5 ${versionCheck}
      RETURNING p.id, p.title, p.content, p.created_at, p.updated_at, p.user_id
    )
    SELECT target.user_id AS owner_id, target.updated_at AS seen_version,
           updated.id, updated.title, updated.content, updated.created_at, updated.updated_at,
           users.id AS author_id, users.email AS author_email
    FROM target
    LEFT JOIN updated ON true
    LEFT JOIN users ON users.id = updated.user_id`;
}

/** `text` with only the parameters it uses, numbered from $1 in the order of their numbers, and which they were. */
function numbered(text: string): { text: string; used: number[] } {
  const used = [...new Set([...text.matchAll(/\$(\d)/g)].map((m) => Number(m[1])))].sort();
  return { text: text.replace(/\$(\d)/g, (_, n) => `$${used.indexOf(Number(n)) + 1}`), used };
}

const CASES = [false, true].flatMap((title) =>
  [false, true].flatMap((content) =>
    title || content ? [false, true].map((conditional) => ({ title, content, conditional })) : [],
  ),
);

async function main(): Promise<void> {
  const server = process.argv[2] ?? process.env.DATABASE_URL;
  if (server === undefined) throw new Error("give the server's URL");
  await recreateDatabase(server, DATABASE);
  const client = new pg.Client({ connectionString: withDatabase(server, DATABASE) });
  await client.connect();
  try {
    await createFallbackSchema(client);
    await seed(client, { users: USERS, posts: POSTS }, "hash");
    // The statement's own cost, not the wait for the WAL to reach the disk at every commit.
    await client.query("set synchronous_commit = off");
    const versions = new Map<number, Date>();
    const rows = await client.query<{ id: string; updated_at: Date }>("select id, updated_at from posts");
    for (const row of rows.rows) versions.set(Number(row.id), row.updated_at);
    const variantText = new Map(CASES.map((c) => [c, numbered(updateText(c))]));
    const singleText = numbered(updateText("single"));
    let now = Date.parse("2026-01-01T00:00:00Z");

    const backend = (await client.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]
      ?.pid as number;
    const backendSeconds = () => processCpu(backend)?.seconds ?? Number.NaN;
    /** Microseconds per statement: the backend's CPU time, and the wall time. */
    const round = async (form: "variants" | "single", count: number): Promise<[number, number]> => {
      const cpuBefore = backendSeconds();
      const start = process.hrtime.bigint();
      for (let i = 0; i < count; i++) {
        const c = CASES[i % CASES.length] as (typeof CASES)[number];
        const id = 1 + Math.floor(Math.random() * POSTS);
        const version = versions.get(id) as Date;
        const values = [
          id,
          c.title ? `title ${i}` : null,
          c.content ? `content ${i} ${"x".repeat(300)}` : null,
          new Date(++now).toISOString(),
          ((id - 1) % USERS) + 1,
          c.conditional ? [version.toISOString()] : null,
        ];
        const statement =
          form === "single" ? singleText : (variantText.get(c) as ReturnType<typeof numbered>);
        const name =
          form === "single"
            ? "u_single"
            : `u_${c.title ? "t" : ""}${c.content ? "c" : ""}${c.conditional ? "v" : ""}`;
        const result = await client.query<{ updated_at: Date | null }>({
          name,
          text: statement.text,
          values: statement.used.map((n) => values[n - 1]),
        });
        const updatedAt = result.rows[0]?.updated_at;
        if (updatedAt == null) throw new Error(`update of post ${id} changed nothing`);
        versions.set(id, updatedAt);
      }
      const wall = Number(process.hrtime.bigint() - start) / 1000 / count;
      return [((backendSeconds() - cpuBefore) * 1e6) / count, wall];
    };

    // Warm-up: every named statement prepared and past PostgreSQL's five custom plans.
    await round("variants", 200);
    await round("single", 200);
    const times: Record<"variants" | "single", number[]> = { variants: [], single: [] };
    const walls: Record<"variants" | "single", number[]> = { variants: [], single: [] };
    for (let r = 0; r < ROUNDS; r++) {
      const order: ("variants" | "single")[] = r % 2 === 0 ? ["variants", "single"] : ["single", "variants"];
      for (const form of order) {
        const [cpu, wall] = await round(form, PER_ROUND);
        times[form].push(cpu);
        walls[form].push(wall);
      }
      if (r % 4 === 3) await client.query("vacuum posts");
    }
    const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] as number;
    for (const form of ["variants", "single"] as const) {
      console.log(
        `${form}: PostgreSQL CPU µs per statement by round ${times[form].map((t) => t.toFixed(1)).join(", ")}; median ${median(times[form]).toFixed(1)}, best ${Math.min(...times[form]).toFixed(1)}; wall µs median ${median(walls[form]).toFixed(1)}, best ${Math.min(...walls[form]).toFixed(1)}`,
      );
    }

    const differences = times.single.map((t, i) => t - (times.variants[i] as number));
    console.log(
      `single − variants, paired by round: ${differences.map((d) => d.toFixed(1)).join(", ")}; median ${median(differences).toFixed(1)} µs`,
    );

    // The plans: the same statements prepared in SQL, forced generic, explained inside a rolled-back transaction.
    await client.query("set plan_cache_mode = force_generic_plan");
    const types = ["int8", "text", "text", "timestamptz", "int8", "timestamptz[]"];
    const explain = async (label: string, statement: ReturnType<typeof numbered>, all: unknown[]) => {
      await client.query("begin");
      try {
        const declared = statement.used.map((n) => types[n - 1]).join(", ");
        await client.query(`prepare explained(${declared}) as ${statement.text}`);
        const literal = statement.used
          .map((n) => all[n - 1])
          .map((value) =>
            value === null
              ? "NULL"
              : Array.isArray(value)
                ? `ARRAY['${value[0]}']::timestamptz[]`
                : `'${value}'`,
          );
        const plan = await client.query<{ "QUERY PLAN": string }>(
          `explain (analyze, costs off, timing on, summary on) execute explained(${literal.join(", ")})`,
        );
        console.log(`\n${label}\n${plan.rows.map((row) => row["QUERY PLAN"]).join("\n")}`);
      } finally {
        await client.query("rollback");
        await client.query("deallocate all");
      }
    };
    const id = 4242;
    const values = [
      id,
      "a title",
      null,
      new Date(++now).toISOString(),
      ((id - 1) % USERS) + 1,
      [(versions.get(id) as Date).toISOString()],
    ];
    await explain(
      "variant (title, conditional)",
      variantText.get(
        CASES.find((c) => c.title && !c.content && c.conditional) as (typeof CASES)[number],
      ) as ReturnType<typeof numbered>,
      values,
    );
    await explain("single statement", singleText, values);
  } finally {
    await client.end();
  }
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`drop database ${DATABASE} with (force)`);
  await admin.end();
}

await main();
