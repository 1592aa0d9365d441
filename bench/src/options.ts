import { parseArgs } from "node:util";

/** How one `pnpm bench` run is shaped. */
export interface Options {
  /** Server URL of any database on the PostgreSQL server; the bench database is made beside it. */
  readonly databaseUrl: string;
  /** Name of the database dropped and re-created for the run. */
  readonly database: string;
  readonly posts: number;
  readonly users: number;
  /** Measured seconds per scenario and round. */
  readonly duration: number;
  /** Length of the alternating slices a round is cut into, in seconds. */
  readonly slice: number;
  /** Unmeasured seconds per scenario and server before its first round. */
  readonly warmup: number;
  /** Rounds per scenario; each round runs the service then the baseline. */
  readonly rounds: number;
  readonly connections: number;
  /** Connections sending logins in the login scenario. */
  readonly loginConnections: number;
  /** Connections of the search scenarios. */
  readonly searchConnections: number;
  /** Requests per second of GET one post sent beside the logins. */
  readonly probeRate: number;
  /** Only these scenarios (all when empty). */
  readonly only: readonly string[];
  /** Embedded (PGlite) service only, no baseline, smaller seed. */
  readonly embedded: boolean;
  /** The "service" is a second baseline: ratios near 1.0 show the harness is fair. */
  readonly selfCheck: boolean;
  /** Leave the Express server out (it runs beside the baseline otherwise, except in a self-check). */
  readonly skipExpress: boolean;
  readonly quick: boolean;
  /** Extra `node` arguments for the service process (e.g. --cpu-prof, a V8 flag, an --import). */
  readonly serviceNodeArgs: readonly string[];
  /**
   * Measure on the database a previous run seeded with the same counts, without seeding it again
   * (development only: create and patch leave their posts behind, and the recorded run seeds afresh).
   */
  readonly reuseDatabase: boolean;
  /**
   * Only the search pages of a population of terms drawn from the data, on the service alone
   * (no baseline, no other scenario), their latency distribution per class of term.
   */
  readonly searchOnly: boolean;
  /**
   * The table-size curve in one run: the service on the bench database and, beside it, on a
   * larger one, as two contestants of the same rounds (load/curve-run.ts).
   */
  readonly curve: boolean;
  /** Posts of the curve's larger database. */
  readonly curvePosts: number;
  /** The curve's larger database: the bench database's name and its size (posts_bench_10m). */
  readonly curveDatabase: string;
  /**
   * GET one alone, at each of {@link CLOSED_LOOP_CONNECTIONS} connections in turn (each
   * connection sends its next request when its answer came), one slice per server and round:
   * what the service's reads wait for when few are in flight (bench/README.md#targets).
   */
  readonly closedLoop: boolean;
}

/**
 * The connections `--closed-loop` measures GET one at, in the order measured: the bench's 64, a
 * harness's 32, a few clients (8, each statement gathering a few reads; measured, not judged),
 * and one alone (nothing to gather). Busiest first: each server's code is then compiled hot
 * before the lone connection, at a few hundred requests a second, measures its latency.
 */
export const CLOSED_LOOP_CONNECTIONS: readonly number[] = [64, 32, 8, 1];

const HELP = `Usage: pnpm bench [-- options]

  --quick               1 round of 4 s per scenario, 2 s warm-up (development)
  --embedded            the service on its embedded PGlite database, no baseline (information)
  --self-check          measure the baseline against a second baseline (harness fairness)
  --skip-express        leave out the Express server (common practice) beside the baseline
  --rounds N            interleaved rounds per scenario (default 3)
  --duration S          measured seconds per round (default 10)
  --slice S             a round alternates servers every S seconds (default 2)
  --warmup S            warm-up seconds per scenario and server (default 3)
  --connections N       concurrent connections (default 64)
  --login-connections N connections sending logins (default 16)
  --search-connections N connections of the search scenarios (default 16)
  --probe-rate N        GET one post per second beside the logins (default 100)
  --posts N / --users N seed size (default 1000000 / 1000; embedded 100000 / 1000)
  --service-node-args="A B"  extra node arguments for the service (profiling, trying a V8 flag)
  --reuse-database      measure on the database an earlier run seeded with the same counts
                        instead of seeding it again (development only; both with --curve)
  --search-only         only search pages: a few hundred terms drawn from the data and planted
                        ones, first, following and deep pages, latency per class (service alone)
  --curve               how latency grows with the table, in one run: the service on the bench
                        database and on a larger one (BENCH_DATABASE and its size, posts_bench_10m)
                        in alternating slices of the same rounds, p50 and p99 growth judged
                        against 1.3x; scenarios get-one, list-first, list-deep, list-cold,
                        search-rare, search-common, search-korean, create (--only picks among them)
  --curve-posts N       posts of the curve's larger database (default 10000000)
  --closed-loop         GET one alone at 64, 32, 8 and 1 connections, driven by wrk (Debian package
                        wrk), one 8 s slice per server and round, 5 rounds (--rounds, --duration
                        set them); p50 at 1 connection and req/s at 32 and 64 judged against the
                        baseline
  --only a,b            scenarios to run (get-one, get-304, list-first, list-deep, list-depth,
                        list-user, list-cold, search-rare, search-common, search-korean, create,
                        create-key, patch, login; with --closed-loop, get-one-c64, get-one-c32,
                        get-one-c8, get-one-c1)
  DATABASE_URL          PostgreSQL server (default postgres://postgres@127.0.0.1:5432/postgres)
  BENCH_DATABASE        database made for the run (default posts_bench)`;

/**
 * A count as short as a name may carry it: 1m for a million, 200k, or the number itself when
 * neither divides it.
 */
export function sizeLabel(count: number): string {
  if (count % 1_000_000 === 0) return `${count / 1_000_000}m`;
  if (count % 1000 === 0) return `${count / 1000}k`;
  return String(count);
}

/**
 * The run's options, from `argv` (what follows `pnpm bench`) and the environment. Prints the help
 * and exits on --help; throws on an option it does not know, a count out of range, or options
 * that do not go together.
 */
export function parseOptions(argv: readonly string[]): Options {
  const { values } = parseArgs({
    // `pnpm bench -- --quick` hands the separator on; `pnpm bench --quick` does not.
    args: argv[0] === "--" ? argv.slice(1) : [...argv],
    options: {
      quick: { type: "boolean", default: false },
      embedded: { type: "boolean", default: false },
      "self-check": { type: "boolean", default: false },
      "skip-express": { type: "boolean", default: false },
      rounds: { type: "string" },
      duration: { type: "string" },
      warmup: { type: "string" },
      slice: { type: "string" },
      connections: { type: "string" },
      "login-connections": { type: "string" },
      "search-connections": { type: "string" },
      "reuse-database": { type: "boolean", default: false },
      "search-only": { type: "boolean", default: false },
      curve: { type: "boolean", default: false },
      "closed-loop": { type: "boolean", default: false },
      "curve-posts": { type: "string" },
      "probe-rate": { type: "string" },
      posts: { type: "string" },
      users: { type: "string" },
      only: { type: "string" },
      "service-node-args": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(HELP);
    process.exit(0);
  }
  const quick = values.quick ?? false;
  const embedded = values.embedded ?? false;
  const closedLoop = values["closed-loop"] ?? false;
  const int = (name: string, raw: string | undefined, fallback: number, min = 1) => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return n;
  };
  const database = process.env.BENCH_DATABASE ?? "posts_bench";
  const curvePosts = int("curve-posts", values["curve-posts"], 10_000_000, 1000);
  const duration = int("duration", values.duration, quick ? 4 : closedLoop ? 8 : 10);
  const options: Options = {
    databaseUrl: process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    database,
    posts: int("posts", values.posts, embedded ? 100_000 : 1_000_000, 1000),
    users: int("users", values.users, 1000, 1),
    duration,
    // A closed loop gives each server one slice a round, as wrk run against each in turn would.
    slice: int("slice", values.slice, closedLoop ? duration : 2),
    warmup: int("warmup", values.warmup, quick ? 2 : 3, 0),
    rounds: int("rounds", values.rounds, quick || embedded ? 1 : closedLoop ? 5 : 3),
    connections: int("connections", values.connections, 64),
    loginConnections: int("login-connections", values["login-connections"], 16),
    searchConnections: int("search-connections", values["search-connections"], 16),
    probeRate: int("probe-rate", values["probe-rate"], 100),
    only: values.only === undefined ? [] : values.only.split(",").map((s) => s.trim()),
    embedded,
    selfCheck: values["self-check"] ?? false,
    skipExpress: values["skip-express"] ?? false,
    quick,
    serviceNodeArgs: values["service-node-args"]?.split(" ").filter((a) => a !== "") ?? [],
    reuseDatabase: values["reuse-database"] ?? false,
    searchOnly: values["search-only"] ?? false,
    curve: values.curve ?? false,
    curvePosts,
    curveDatabase: `${database}_${sizeLabel(curvePosts)}`,
    closedLoop,
  };
  if (options.posts < options.users) throw new Error("--posts must be at least --users");
  if (options.curve) {
    if (options.embedded || options.selfCheck || options.searchOnly)
      throw new Error(
        "--curve measures the service on PostgreSQL alone: not with --embedded, --self-check or --search-only",
      );
    if (options.curvePosts <= options.posts) throw new Error("--curve-posts must be more than --posts");
  } else if (values["curve-posts"] !== undefined) throw new Error("--curve-posts is for --curve");
  if (options.closedLoop && (options.embedded || options.curve || options.searchOnly))
    throw new Error("--closed-loop measures GET one alone: not with --embedded, --curve or --search-only");
  return options;
}
