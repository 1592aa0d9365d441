import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Prerequisite } from "@posts/domain/testing/vitest";
import pg from "pg";

const PG_USER = "postgres";

/**
 * `initdb`'s arguments for a test cluster in `dataDir`: trust on every connection, the superuser
 * `postgres`, UTF-8 with the C.UTF-8 locale, and no fsync of the new files (a test's cluster is
 * thrown away).
 */
export function initdbArguments(dataDir: string): string[] {
  return ["-D", dataDir, "-A", "trust", "-U", PG_USER, "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"];
}

/**
 * `pg_basebackup`'s arguments for a streaming standby in `dataDir` of the primary on
 * 127.0.0.1:`primaryPort`: recovery settings written (`-R`), the WAL streamed alongside, an
 * immediate checkpoint to start from rather than a spread one (minutes on an idle server), and no
 * fsync of the copy.
 */
export function baseBackupArguments(dataDir: string, primaryPort: number): string[] {
  return [
    "-D",
    dataDir,
    "-R",
    "-X",
    "stream",
    "-h",
    "127.0.0.1",
    "-p",
    String(primaryPort),
    "-U",
    PG_USER,
    "--checkpoint=fast",
    "--no-sync",
  ];
}
const ROOT = "/usr/lib/postgresql";

/** The newest PostgreSQL's server binaries on this machine (Debian's layout), or `PG_BIN`. */
function serverBinaries(): string | undefined {
  if (process.env.PG_BIN !== undefined) return process.env.PG_BIN;
  if (!existsSync(ROOT)) return undefined;
  const [newest] = readdirSync(ROOT)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  return newest === undefined ? undefined : join(ROOT, newest, "bin");
}

/** `command` run as the OS user postgres when this process is root (initdb and the server refuse root). */
function asPostgres(command: string, args: readonly string[]): { command: string; args: string[] } {
  if (process.getuid?.() !== 0) return { command, args: [...args] };
  return {
    command: "setpriv",
    args: [`--reuid=${PG_USER}`, `--regid=${PG_USER}`, "--init-groups", command, ...args],
  };
}

/**
 * The prerequisite of a suite that makes PostgreSQL clusters of its own with {@link LocalCluster}
 * (give it to `describeNeeding`): present when the server binaries are on this machine.
 */
export function postgresBinariesForTests(): Prerequisite {
  const bin = serverBinaries();
  return {
    needs: "PostgreSQL's server binaries (initdb, pg_basebackup, postgres)",
    hint: "install the postgresql package, or set PG_BIN to their directory",
    present: bin !== undefined && existsSync(join(bin, "initdb")),
  };
}

/** One server of a {@link LocalCluster}. */
export interface LocalServer {
  readonly name: string;
  readonly port: number;
  /** The postmaster's pid while it runs. */
  readonly pid: number | undefined;
  /** `postgres://postgres@127.0.0.1:<port>/<database>`. */
  url(database?: string): string;
}

interface Running {
  readonly name: string;
  readonly port: number;
  readonly dataDir: string;
  child: ChildProcess | undefined;
}

/**
 * Small PostgreSQL servers of a test's own, on 127.0.0.1 with trust authentication, made with
 * initdb and pg_basebackup in a temporary directory: a primary, its streaming standbys, and what
 * a failover does to them (promotion, a stop, a crash). Every server is a child of this
 * process, stopped by its pid in {@link stopAll}, which the suite calls in `afterAll` whether its
 * tests passed or not; the directory goes with it. Durability on disk is off (fsync): the tests
 * are about which server answers, not about the disk.
 */
export class LocalCluster {
  readonly dir: string;
  readonly #bin: string;
  readonly #servers = new Map<string, Running>();

  constructor() {
    const bin = serverBinaries();
    if (bin === undefined) throw new Error("no PostgreSQL server binaries (see postgresBinariesForTests)");
    this.#bin = bin;
    this.dir = mkdtempSync(join(tmpdir(), "posts-cluster-"));
    if (process.getuid?.() === 0) execFileSync("chown", [PG_USER, this.dir]);
  }

  /**
   * Makes and starts a primary on `port`, with `settings` added to its postgresql.conf (e.g.
   * `synchronous_standby_names = 'ghost'`).
   */
  async startPrimary(name: string, port: number, settings: readonly string[] = []): Promise<LocalServer> {
    const dataDir = join(this.dir, name);
    this.#run("initdb", initdbArguments(dataDir));
    writeFileSync(
      join(dataDir, "postgresql.conf"),
      [
        "",
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${this.dir}'`,
        "max_connections = 40",
        "shared_buffers = 16MB",
        "fsync = off",
        "wal_level = replica",
        "max_wal_senders = 4",
        "wal_keep_size = 64MB",
        "hot_standby = on",
        ...settings,
        "",
      ].join("\n"),
      { flag: "a" },
    );
    return this.#start({ name, port, dataDir, child: undefined });
  }

  /** Makes a streaming standby of `primary` by pg_basebackup and starts it on `port`. */
  async startStandby(
    name: string,
    port: number,
    primary: LocalServer,
    settings: readonly string[] = [],
  ): Promise<LocalServer> {
    const dataDir = join(this.dir, name);
    this.#run("pg_basebackup", baseBackupArguments(dataDir, primary.port));
    // The standby's name in pg_stat_replication, which synchronous_standby_names can name.
    writeFileSync(
      join(dataDir, "postgresql.auto.conf"),
      [`cluster_name = '${name}'`, ...settings, ""].join("\n"),
      { flag: "a" },
    );
    if (process.getuid?.() === 0) execFileSync("chown", ["-R", PG_USER, dataDir]);
    return this.#start({ name, port, dataDir, child: undefined });
  }

  /** Promotes standby `name` and waits until it takes writes. */
  async promote(name: string): Promise<void> {
    await sql(this.#server(name).port, "SELECT pg_promote(true, 30)");
  }

  /** Runs one statement on server `name`, in `database`, on a connection of its own; answers its rows. */
  query<Row>(
    name: string,
    text: string,
    values: readonly unknown[] = [],
    database = "postgres",
  ): Promise<Row[]> {
    return sql(this.#server(name).port, text, values, database) as Promise<Row[]>;
  }

  /** Stops `name` by its pid: fast shutdown (SIGINT), or a crash (SIGKILL); waits until it is gone. */
  async stop(name: string, how: "fast" | "kill" = "fast"): Promise<void> {
    const server = this.#server(name);
    const child = server.child;
    server.child = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill(how === "fast" ? "SIGINT" : "SIGKILL");
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
    // A postmaster killed leaves its backends; they exit once they notice it gone.
  }

  /** Starts again server `name`, stopped by {@link stop}, on its port and data; waits until it answers. */
  async restart(name: string): Promise<LocalServer> {
    const server = this.#server(name);
    if (server.child !== undefined) throw new Error(`${name} is running`);
    return this.#start(server);
  }

  /** Stops every server this cluster started, by pid, and removes its directory. */
  async stopAll(): Promise<void> {
    for (const name of [...this.#servers.keys()].reverse()) await this.stop(name, "fast");
    rmSync(this.dir, { recursive: true, force: true });
  }

  #server(name: string): Running {
    const server = this.#servers.get(name);
    if (server === undefined) throw new Error(`no server ${name} in this cluster`);
    return server;
  }

  #run(tool: string, args: readonly string[]): void {
    const call = asPostgres(join(this.#bin, tool), args);
    execFileSync(call.command, call.args, { stdio: ["ignore", "pipe", "pipe"] });
  }

  async #start(server: Running): Promise<LocalServer> {
    this.#servers.set(server.name, server);
    // setpriv replaces its own process with the server's: the child's pid is the postmaster's.
    const call = asPostgres(join(this.#bin, "postgres"), ["-D", server.dataDir, "-p", String(server.port)]);
    const child = spawn(call.command, call.args, { stdio: "ignore" });
    server.child = child;
    // A loop, not vi.waitFor: this module is no test and runs outside vitest's globals too.
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${server.name} exited with ${child.exitCode}`);
      try {
        await sql(server.port, "SELECT 1");
        break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    return {
      name: server.name,
      port: server.port,
      get pid() {
        return server.child?.pid;
      },
      url: (database = "postgres") => `postgres://${PG_USER}@127.0.0.1:${server.port}/${database}`,
    };
  }
}

/** Runs `text` on the server at `port` on a connection of its own. */
async function sql(
  port: number,
  text: string,
  values: readonly unknown[] = [],
  database = "postgres",
): Promise<unknown[]> {
  const client = new pg.Client({
    host: "127.0.0.1",
    port,
    user: PG_USER,
    database,
    connectionTimeoutMillis: 2000,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    return (await client.query(text, [...values])).rows;
  } finally {
    await client.end().catch(() => {});
  }
}
