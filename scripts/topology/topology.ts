import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { baseBackupArguments, initdbArguments } from "@posts/adapters-postgres/testing";
import pg from "pg";
import { isAlive, ProcessRegistry } from "./processes.js";

/** The repository root, where the service's build lives. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The ports of the topology: fixed, because PgBouncer and HAProxy name their backends by port;
 * below 32768, outside Linux's ephemeral range, so that no outgoing connection can be holding one.
 */
export const PORTS = {
  primary: 22401,
  standbys: [22402, 22403],
  pgbouncer: 22411,
  haproxy: 22421,
  instances: [22431, 22432, 22433],
} as const;

/** The database the service uses on the primary (and, replicated, on the standbys). */
export const DATABASE = "posts";

/** PgBouncer's server connections per database (primary, each standby), whatever the clients. */
export const PGBOUNCER_POOL_SIZE = 8;

/** The PostgreSQL servers, by name. */
export type ServerName = "primary" | "standby1" | "standby2";

/** Settings of {@link startTopology}. */
export interface TopologyOptions {
  /** Where every data directory, configuration, socket and log goes (made if absent, must be empty). */
  readonly dir: string;
  /** Connections each service instance's pools may open (DB_POOL_SIZE). Default 10. */
  readonly instancePoolSize?: number;
  /** Progress lines; default none. */
  readonly say?: (line: string) => void;
}

const PG_USER = "postgres";

/** The newest PostgreSQL's binaries on this machine (Debian's layout), or PG_BIN. */
export function pgBin(): string {
  if (process.env.PG_BIN !== undefined) return process.env.PG_BIN;
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => /^\d+$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0] === undefined) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql");
  return join(root, versions[0], "bin");
}

/** `command` run as the OS user postgres (initdb and the servers refuse root), replacing setpriv's own process. */
export function asPostgres(command: string, args: readonly string[]): { command: string; args: string[] } {
  if (process.getuid?.() !== 0) return { command, args: [...args] };
  return {
    command: "setpriv",
    args: [`--reuid=${PG_USER}`, `--regid=${PG_USER}`, "--init-groups", command, ...args],
  };
}

function runAsPostgres(command: string, args: readonly string[]): void {
  const call = asPostgres(command, args);
  execFileSync(call.command, call.args, { stdio: ["ignore", "pipe", "pipe"] });
}

function has(command: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${command} || test -x /usr/sbin/${command}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/**
 * Installs Debian packages when their command is absent (`apt-get update` once, then
 * `apt-get install -y`), without starting the distribution's own services (RUNLEVEL=1 makes
 * invoke-rc.d leave them stopped). `packages` maps each package to the command it provides;
 * by default PgBouncer and HAProxy, which this topology needs.
 */
export function ensurePackages(
  say: (line: string) => void = () => {},
  packages: Readonly<Record<string, string>> = { pgbouncer: "pgbouncer", haproxy: "haproxy" },
): void {
  const missing = Object.entries(packages)
    .filter(([, command]) => !has(command))
    .map(([name]) => name);
  if (missing.length === 0) return;
  say(`installing ${missing.join(" ")} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive", RUNLEVEL: "1" };
  execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
  execFileSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing], {
    stdio: "inherit",
    env,
  });
}

/** A client connection to one of the topology's servers or to PgBouncer; closed by the caller. */
export async function clientOf(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on("error", () => {});
  await client.connect();
  return client;
}

/** Runs one statement on `url` on a connection of its own. */
export async function sql<Row = Record<string, unknown>>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<Row[]> {
  const client = await clientOf(url);
  try {
    return (await client.query(text, values)).rows as Row[];
  } finally {
    await client.end().catch(() => {});
  }
}

/** The last lines of a process's log, for an error message. */
export function tailOf(file: string, lines = 30): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/**
 * Asks `attempt` every 100 ms until it answers a value, failing with `what` after `timeoutMs`. Not
 * vi.waitFor: the command line (cli.ts) starts the topology outside vitest.
 */
export async function until<T>(
  what: string,
  timeoutMs: number,
  attempt: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} within ${timeoutMs} ms${last instanceof Error ? `: ${last.message}` : ""}`);
}

/**
 * One running topology on this machine: a primary and two streaming standbys, PgBouncer in
 * transaction pooling in front of the three (and in session pooling for the instances' LISTEN
 * connections to the primary), three service instances reading from the standbys through it,
 * and HAProxy in front of the instances. Every process is recorded by pid in its
 * directory (see `ProcessRegistry`), so another process can stop it ({@link attachTopology}).
 */
export class Topology {
  readonly dir: string;
  readonly processes: ProcessRegistry;
  readonly #say: (line: string) => void;
  readonly #instancePoolSize: number;

  constructor(dir: string, options: { say?: (line: string) => void; instancePoolSize?: number } = {}) {
    this.dir = dir;
    this.processes = new ProcessRegistry(dir);
    this.#say = options.say ?? (() => {});
    this.#instancePoolSize = options.instancePoolSize ?? 10;
  }

  /** The port of a PostgreSQL server. */
  portOf(server: ServerName): number {
    return server === "primary" ? PORTS.primary : PORTS.standbys[server === "standby1" ? 0 : 1];
  }

  /** A URL straight to a server (not through PgBouncer), to `database`. */
  directUrl(server: ServerName, database = DATABASE): string {
    return `postgres://${PG_USER}@127.0.0.1:${this.portOf(server)}/${database}`;
  }

  /** A URL to a server through PgBouncer, in transaction pooling. */
  bouncerUrl(server: ServerName): string {
    return `postgres://${PG_USER}@127.0.0.1:${PORTS.pgbouncer}/${DATABASE}_${server}`;
  }

  /**
   * A URL to the primary through PgBouncer in session pooling, for the instances' LISTEN
   * connections (`DATABASE_LISTEN_URL`): a session keeps its server connection, so its LISTEN
   * stays on the connection the notifications arrive on.
   */
  get listenUrl(): string {
    return `postgres://${PG_USER}@127.0.0.1:${PORTS.pgbouncer}/${DATABASE}_primary_listen`;
  }

  /** A URL to any other `database` of the primary through PgBouncer, in transaction pooling. */
  bouncerUrlOf(database: string): string {
    return `postgres://${PG_USER}@127.0.0.1:${PORTS.pgbouncer}/${database}`;
  }

  /** The URL of service instance `index` (0, 1, 2). */
  instanceUrl(index: number): string {
    return `http://127.0.0.1:${PORTS.instances[index]}`;
  }

  /** The URL of HAProxy, in front of the instances. */
  get url(): string {
    return `http://127.0.0.1:${PORTS.haproxy}`;
  }

  /** The signing key every instance shares. */
  get jwtSecret(): string {
    return readFileSync(join(this.dir, "jwt-secret"), "utf8");
  }

  /** The environment of every instance, less its PORT. */
  instanceEnv(): Record<string, string> {
    return {
      HOST: "127.0.0.1",
      DATABASE_URL: this.bouncerUrl("primary"),
      // LISTEN needs a session; transaction pooling would lose it between statements.
      DATABASE_LISTEN_URL: this.listenUrl,
      DATABASE_READ_URLS: [this.bouncerUrl("standby1"), this.bouncerUrl("standby2")].join(","),
      // PgBouncer 1.18 in transaction pooling cannot keep protocol-level prepared statements.
      DB_NAMED_STATEMENTS: "false",
      DB_POOL_SIZE: String(this.#instancePoolSize),
      JWT_SECRET: this.jwtSecret,
      LOG_LEVEL: "warn",
      APP_TIME_ZONE: "UTC",
    };
  }

  /**
   * Brings the schema up to date with the service's own `migrate` command, through PgBouncer in
   * transaction pooling as the instances reach the primary (the migrations hold their lock for one
   * transaction, which PgBouncer keeps on one server connection). The instances then migrate
   * again as they start, and find nothing to do.
   */
  migrate(): void {
    execFileSync(process.execPath, [join(ROOT, "packages/app/dist/main.js"), "migrate"], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: this.bouncerUrl("primary"),
        DB_NAMED_STATEMENTS: "false",
        JWT_SECRET: this.jwtSecret,
        DATA_DIR: join(this.dir, "migrate"),
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "inherit", "inherit"],
    });
  }

  // ---- PostgreSQL ----

  #dataDir(server: ServerName): string {
    return join(this.dir, server);
  }

  /** Makes the primary's cluster and the standbys' base backups. */
  async initClusters(): Promise<void> {
    const bin = pgBin();
    const primaryDir = this.#dataDir("primary");
    this.#say("initdb: primary");
    runAsPostgres(join(bin, "initdb"), initdbArguments(primaryDir));
    writeFileSync(
      join(primaryDir, "postgresql.conf"),
      [
        "",
        "# The topology harness: small, on loopback, sockets in its own directory.",
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${this.dir}'`,
        "max_connections = 100",
        "shared_buffers = 32MB",
        // A throwaway cluster: durability on disk is not what the tests are about.
        "fsync = off",
        "wal_level = replica",
        "max_wal_senders = 6",
        "wal_keep_size = 256MB",
        "hot_standby = on",
        "log_min_messages = warning",
        "",
      ].join("\n"),
      { flag: "a" },
    );
    await this.startServer("primary");
    await sql(this.directUrl("primary", "postgres"), `CREATE DATABASE ${DATABASE}`);
    for (const standby of ["standby1", "standby2"] as const) {
      this.#say(`pg_basebackup: ${standby}`);
      runAsPostgres(join(bin, "pg_basebackup"), baseBackupArguments(this.#dataDir(standby), PORTS.primary));
      await this.startServer(standby);
    }
    await this.waitForReplay();
  }

  /** Starts a server that is stopped, and waits until it accepts connections. */
  async startServer(server: ServerName): Promise<void> {
    const call = asPostgres(join(pgBin(), "postgres"), [
      "-D",
      this.#dataDir(server),
      "-p",
      String(this.portOf(server)),
    ]);
    const pid = this.processes.start({ name: server, ...call, stopSignal: "SIGINT" });
    await until(`${server} did not accept connections`, 60_000, async () => {
      if (!isAlive(pid))
        throw new Error(`${server} exited; its log ends:\n${tailOf(join(this.dir, `${server}.log`))}`);
      await sql(this.directUrl(server, "postgres"), "SELECT 1");
      return true;
    });
  }

  /** Stops a server by its pid: `fast` (SIGINT) by default, `immediate` (SIGQUIT) for a crash. */
  async stopServer(server: ServerName, mode: "fast" | "immediate" = "fast"): Promise<void> {
    await this.processes.stop(server, { signal: mode === "fast" ? "SIGINT" : "SIGQUIT" });
  }

  /** Waits until both standbys have replayed everything the primary has flushed. */
  async waitForReplay(timeoutMs = 30_000): Promise<void> {
    const [{ position }] = (await sql<{ position: string }>(
      this.directUrl("primary", "postgres"),
      "SELECT pg_current_wal_flush_lsn()::text AS position",
    )) as [{ position: string }];
    for (const standby of ["standby1", "standby2"] as const) {
      await until(`${standby} did not replay ${position}`, timeoutMs, async () => {
        const [row] = await sql<{ done: boolean }>(
          this.directUrl(standby, "postgres"),
          "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done",
          [position],
        );
        return row?.done ? true : undefined;
      });
    }
  }

  // ---- PgBouncer ----

  /** Writes PgBouncer's configuration and starts it. */
  async startPgbouncer(): Promise<void> {
    const ini = join(this.dir, "pgbouncer.ini");
    const users = join(this.dir, "pgbouncer-users.txt");
    writeFileSync(users, `"${PG_USER}" ""\n`);
    const databases = (["primary", "standby1", "standby2"] as const).map(
      (server) => `${DATABASE}_${server} = host=127.0.0.1 port=${this.portOf(server)} dbname=${DATABASE}`,
    );
    writeFileSync(
      ini,
      [
        "[databases]",
        ...databases,
        // The instances' LISTEN connections, one session each for as long as it lives.
        `${DATABASE}_primary_listen = host=127.0.0.1 port=${PORTS.primary} dbname=${DATABASE} pool_mode=session`,
        // Any other database of the primary, under its own name (tests make scratch ones).
        `* = host=127.0.0.1 port=${PORTS.primary}`,
        "",
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        `listen_port = ${PORTS.pgbouncer}`,
        `unix_socket_dir = ${this.dir}`,
        "auth_type = trust",
        `auth_file = ${users}`,
        "pool_mode = transaction",
        `default_pool_size = ${PGBOUNCER_POOL_SIZE}`,
        "min_pool_size = 0",
        "reserve_pool_size = 0",
        "max_client_conn = 1000",
        // pg sends these at connect time; in transaction pooling they cannot follow a client.
        "ignore_startup_parameters = extra_float_digits,statement_timeout,options",
        // A server that was down is tried again after 1 s, not the default 15 s.
        "server_login_retry = 1",
        "server_connect_timeout = 3",
        "query_wait_timeout = 10",
        "log_connections = 0",
        "log_disconnections = 0",
        "",
      ].join("\n"),
    );
    for (const file of [ini, users]) chownToPostgres(file);
    const pid = this.processes.start({ name: "pgbouncer", ...asPostgres(pgbouncerBinary(), [ini]) });
    await until("PgBouncer did not accept connections", 30_000, async () => {
      if (!isAlive(pid)) throw new Error(`PgBouncer exited; see ${join(this.dir, "pgbouncer.log")}`);
      await sql(this.bouncerUrl("primary"), "SELECT 1");
      return true;
    });
  }

  // ---- service instances ----

  /**
   * Starts instance `index` (0, 1, 2) from the built service and waits until /ready answers 200.
   * `env` changes its environment (an empty value unsets a variable).
   */
  async startInstance(index: number, env: Readonly<Record<string, string>> = {}): Promise<void> {
    const name = `instance${index + 1}`;
    await startServiceInstance(this.processes, name, PORTS.instances[index] as number, {
      ...this.instanceEnv(),
      DATA_DIR: join(this.dir, name),
      ...env,
    });
  }

  /** Stops instance `index` with SIGTERM (it finishes the requests in flight) and waits until it exited. */
  async stopInstance(index: number): Promise<void> {
    await this.processes.stop(`instance${index + 1}`, { signal: "SIGTERM", timeoutMs: 30_000 });
  }

  /**
   * Restarts instance `index` without failing a request: HAProxy stops sending it new ones
   * (maintenance), the requests it still has finish, it stops (SIGTERM) and starts again, and
   * once /ready answers HAProxy sends it requests again.
   */
  async restartInstance(index: number): Promise<void> {
    const server = `i${index + 1}`;
    await this.haproxy(`set server instances/${server} state maint`);
    await this.haproxy(`set server instances_live/${server} state maint`);
    await until(`HAProxy still had requests on ${server}`, 30_000, async () => {
      const stat = await this.haproxy("show stat");
      const row = stat
        .split("\n")
        .map((line) => line.split(","))
        .find((fields) => fields[0] === "instances" && fields[1] === server);
      // Field 4 of `show stat` is scur: the sessions the server has now.
      return row !== undefined && row[4] === "0" ? true : undefined;
    });
    await this.stopInstance(index);
    await this.startInstance(index);
    await this.haproxy(`set server instances/${server} state ready`);
    await this.haproxy(`set server instances_live/${server} state ready`);
    await until(`HAProxy did not see ${server} up again`, 30_000, async () => {
      const state = await this.haproxy(`show servers state instances`);
      // In `show servers state`, field 6 (srv_op_state) is 2 when the server is running.
      const line = state.split("\n").find((entry) => entry.split(" ")[3] === server);
      return line?.split(" ")[5] === "2" ? true : undefined;
    });
  }

  // ---- HAProxy ----

  /** Writes HAProxy's configuration and starts it in the foreground (no daemon), by pid. */
  async startHaproxy(): Promise<void> {
    const config = join(this.dir, "haproxy.cfg");
    writeFileSync(
      config,
      [...haproxyDefaults(this.dir), ...serviceBalancer(PORTS.haproxy, PORTS.instances)].join("\n"),
    );
    const pid = this.processes.start({
      name: "haproxy",
      command: haproxyBinary(),
      args: ["-f", config, "-db"],
    });
    await until("HAProxy did not answer", 30_000, async () => {
      if (!isAlive(pid)) throw new Error(`HAProxy exited; see ${join(this.dir, "haproxy.log")}`);
      const reply = await fetch(`${this.url}/ready`, { signal: AbortSignal.timeout(2000) });
      return reply.status === 200 ? true : undefined;
    });
  }

  /** One command on HAProxy's runtime API (its stats socket); answers its output. */
  haproxy(command: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(join(this.dir, "haproxy.sock"));
      let output = "";
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => {
        output += chunk;
      });
      socket.on("error", reject);
      socket.on("end", () => resolve(output));
      socket.on("connect", () => socket.end(`${command}\n`));
    });
  }

  /** Stops every process of the topology, newest first, by pid. */
  async down(): Promise<void> {
    await this.processes.stopAll();
  }
}

/** Builds the service (`tsc -b packages/app`), which the instances run from `packages/app/dist`. */
export function buildService(): void {
  execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-b", "packages/app"], {
    cwd: ROOT,
    stdio: "inherit",
  });
}

/**
 * Starts one instance of the built service as `name` in `registry`, on `port` with `env` (an
 * empty value unsets a variable), and waits until its /ready answers 200.
 */
export async function startServiceInstance(
  registry: ProcessRegistry,
  name: string,
  port: number,
  env: Readonly<Record<string, string>>,
): Promise<void> {
  const pid = registry.start({
    name,
    command: process.execPath,
    args: [join(ROOT, "packages/app/dist/main.js")],
    cwd: ROOT,
    env: { ...env, PORT: String(port) },
  });
  await until(`${name} did not become ready`, 60_000, async () => {
    if (!isAlive(pid))
      throw new Error(`${name} exited; its log ends:\n${tailOf(join(registry.dir, `${name}.log`))}`);
    const reply = await fetch(`http://127.0.0.1:${port}/ready`, { signal: AbortSignal.timeout(2000) });
    return reply.status === 200 ? true : undefined;
  });
}

/**
 * The `global` and `defaults` sections of HAProxy's configuration in `dir` (its runtime API on
 * `dir/haproxy.sock`), in HTTP mode, for the frontends and backends that follow them.
 */
export function haproxyDefaults(dir: string): string[] {
  return [
    "global",
    "  maxconn 4000",
    `  stats socket ${join(dir, "haproxy.sock")} mode 600 level admin`,
    "",
    "defaults",
    "  mode http",
    "  timeout connect 2s",
    "  timeout client 60s",
    "  timeout server 60s",
    // A connection a server refused (an instance stopping, a node going down) is tried on another.
    "  retries 3",
    "  option redispatch",
    "",
  ];
}

/**
 * HAProxy's frontend on `port` in front of the service instances on `instancePorts` (servers
 * `i1`, `i2`… of the backends `instances` and `instances_live`), after a `defaults` in HTTP mode.
 */
export function serviceBalancer(port: number, instancePorts: readonly number[]): string[] {
  const servers = instancePorts.map(
    (instancePort, index) => `  server i${index + 1} 127.0.0.1:${instancePort} check`,
  );
  return [
    "frontend posts",
    `  bind 127.0.0.1:${port}`,
    // /ready fails on every instance while the primary is down; reads can still be answered
    // from the standbys then, so requests go to every instance that is alive.
    "  use_backend instances_live if { nbsrv(instances) eq 0 }",
    "  default_backend instances",
    "",
    "backend instances",
    "  balance roundrobin",
    "  option httpchk GET /ready",
    "  http-check expect status 200",
    "  default-server inter 500ms fastinter 250ms fall 2 rise 2",
    ...servers,
    "",
    "backend instances_live",
    "  balance roundrobin",
    "  option httpchk GET /health",
    "  http-check expect status 200",
    "  default-server inter 500ms fall 2 rise 2",
    ...servers,
    "",
  ];
}

/** The topology whose processes are recorded in `dir` (to stop it from another process). */
export function attachTopology(dir: string): Topology {
  return new Topology(dir);
}

/**
 * Makes and starts the whole topology in `options.dir`: installs PgBouncer and HAProxy if
 * absent, builds the service, starts the primary and its two standbys, PgBouncer, the three
 * instances and HAProxy. On failure, stops whatever it started and throws.
 */
export async function startTopology(options: TopologyOptions): Promise<Topology> {
  const say = options.say ?? (() => {});
  mkdirSync(options.dir, { recursive: true });
  if (readdirSync(options.dir).length > 0) throw new Error(`${options.dir} is not empty`);
  // The servers, running as postgres, keep their data, sockets and logs here.
  chownToPostgres(options.dir);
  chmodSync(options.dir, 0o755);
  ensurePackages(say);
  writeFileSync(join(options.dir, "jwt-secret"), randomBytes(48).toString("base64url"), { mode: 0o600 });
  const topology = new Topology(options.dir, {
    say,
    ...(options.instancePoolSize === undefined ? {} : { instancePoolSize: options.instancePoolSize }),
  });
  try {
    say("building the service");
    buildService();
    await topology.initClusters();
    say("starting PgBouncer");
    await topology.startPgbouncer();
    say("migrating the database through PgBouncer");
    topology.migrate();
    say("starting three service instances");
    await Promise.all([0, 1, 2].map((index) => topology.startInstance(index)));
    say("starting HAProxy");
    await topology.startHaproxy();
    return topology;
  } catch (error) {
    await topology.down();
    throw error;
  }
}

/** Gives `path` to the OS user postgres when we are root, so that the servers may write there. */
export function chownToPostgres(path: string): void {
  if (process.getuid?.() !== 0) return;
  const uid = Number(execFileSync("id", ["-u", PG_USER]).toString().trim());
  const gid = Number(execFileSync("id", ["-g", PG_USER]).toString().trim());
  chownSync(path, uid, gid);
}

function pgbouncerBinary(): string {
  return existsSync("/usr/sbin/pgbouncer") ? "/usr/sbin/pgbouncer" : "pgbouncer";
}

/** Debian's HAProxy, in /usr/sbin (on root's PATH only). */
export function haproxyBinary(): string {
  return existsSync("/usr/sbin/haproxy") ? "/usr/sbin/haproxy" : "haproxy";
}
