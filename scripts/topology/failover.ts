import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { jetstreamManager, StorageType } from "@nats-io/jetstream";
import { connect as connectNats } from "@nats-io/transport-node";
import { STREAM_NAME, SUBJECTS } from "@posts/adapters-nats";
import { isAlive, ProcessRegistry } from "./processes.js";
import {
  asPostgres,
  buildService,
  chownToPostgres,
  DATABASE,
  ensurePackages,
  haproxyBinary,
  haproxyDefaults,
  pgBin,
  ROOT,
  serviceBalancer,
  sql,
  startServiceInstance,
  tailOf,
  until,
} from "./topology.js";

/**
 * The ports of the failover topology, all on loopback in 24000–24499, which nothing else of the
 * repository uses; fixed, because etcd, Patroni, HAProxy and NATS name one another by port, and
 * below 32768, outside Linux's ephemeral range.
 */
export const FAILOVER_PORTS = {
  etcdClient: [24001, 24002, 24003],
  etcdPeer: [24011, 24012, 24013],
  postgres: [24101, 24102, 24103],
  patroni: [24111, 24112, 24113],
  /** HAProxy: the write endpoint (Patroni's primary), the read endpoint (its replicas), the service. */
  write: 24201,
  read: 24202,
  service: 24203,
  instances: [24301, 24302, 24303],
  nats: [24401, 24402, 24403],
  natsCluster: [24411, 24412, 24413],
  natsMonitor: [24421, 24422, 24423],
} as const;

/** The PostgreSQL nodes Patroni manages, by name (also their Patroni member names). */
export const NODES = ["pg1", "pg2", "pg3"] as const;
/** One of {@link NODES}. */
export type NodeName = (typeof NODES)[number];

/**
 * The network the PostgreSQL nodes run on, so that one can be cut off from everything else: each
 * node's Patroni and PostgreSQL run in a network namespace of their own (`posts-fo-pg1`…),
 * joined by a veth pair (`posts-fo-pg1` on the machine's side) to a bridge (`posts-fo`) that
 * holds the machine's address on it, where etcd listens for the nodes and from which HAProxy and
 * the tests reach them. Taking a node's link down cuts it off, both ways, from etcd, the other
 * nodes, HAProxy and the instances: a network partition. A bridge rather than routes between the
 * namespaces: nodes on one link need no IP forwarding, a setting of the whole machine. The names,
 * all `posts-fo…`, and 10.200.0.0/24 are the topology's alone.
 */
export const FAILOVER_NETWORK = {
  bridge: "posts-fo",
  /** The machine's address on the bridge. */
  host: "10.200.0.254",
  /** 10.200.0.1, .2, .3 for pg1, pg2, pg3. */
  nodes: ["10.200.0.1", "10.200.0.2", "10.200.0.3"],
  subnet: "10.200.0.0/24",
} as const;

/**
 * Patroni's leader lease and loop: loop_wait + 2 × retry_timeout ≤ ttl, as Patroni requires, and
 * ttl no less than 20. After a promotion, the replica left follows the new leader (and so lets
 * strict synchronous writes go on) only at its next loop: a short loop brings writes back sooner.
 */
export const PATRONI_TIMING = { ttl: 20, loopWait: 2, retryTimeout: 5 } as const;

/** One member as Patroni's REST API `GET /cluster` lists it. */
export interface Member {
  readonly name: string;
  /** `leader`, `sync_standby` or `replica`. */
  readonly role: string;
  /** `running`, `streaming`, `starting`, `stopped`… */
  readonly state: string;
  readonly timeline?: number;
  readonly lag?: number | string;
}

const PG_USER = "postgres";

/** The Debian packages the failover topology runs, by the command each provides. */
const PACKAGES = {
  patroni: "patroni",
  "etcd-server": "etcd",
  haproxy: "haproxy",
  "nats-server": "nats-server",
  iproute2: "ip",
} as const;

/**
 * The deployment of `docs/scaling.md#beyond-one-database-server` made to survive the loss of its
 * primary, on one machine: three etcd members, three PostgreSQL nodes managed by Patroni
 * (synchronous replication in strict mode), HAProxy with a write endpoint on Patroni's primary
 * and a read endpoint on its replicas, three service instances behind HAProxy, and a
 * three-server NATS JetStream cluster holding the stream `POSTS` in three replicas. Every
 * process is recorded by pid in its directory (`ProcessRegistry`); the postmasters Patroni starts
 * are recorded too when the topology stops, so that `down` stops each one by its pid.
 */
export class FailoverTopology {
  readonly dir: string;
  readonly processes: ProcessRegistry;
  readonly #say: (line: string) => void;

  constructor(dir: string, options: { say?: (line: string) => void } = {}) {
    this.dir = dir;
    this.processes = new ProcessRegistry(dir);
    this.#say = options.say ?? (() => {});
  }

  /** The write endpoint (HAProxy, to the node Patroni names primary), to `database`. */
  writeUrl(database = DATABASE): string {
    return `postgres://${PG_USER}@127.0.0.1:${FAILOVER_PORTS.write}/${database}`;
  }

  /** The read endpoint (HAProxy, to Patroni's replicas). */
  readUrl(database = DATABASE): string {
    return `postgres://${PG_USER}@127.0.0.1:${FAILOVER_PORTS.read}/${database}`;
  }

  /** A URL straight to one node's PostgreSQL, over its network link. */
  nodeUrl(node: NodeName, database = DATABASE): string {
    return `postgres://${PG_USER}@${nodeAddress(node)}:${FAILOVER_PORTS.postgres[NODES.indexOf(node)]}/${database}`;
  }

  /**
   * A URL to one node's PostgreSQL through its Unix socket, in the topology's directory: it
   * reaches the node whatever its network link, a partitioned one included.
   */
  nodeSocketUrl(node: NodeName, database = DATABASE): string {
    return `postgres://${PG_USER}@/${database}?host=${encodeURIComponent(this.dir)}&port=${FAILOVER_PORTS.postgres[NODES.indexOf(node)]}`;
  }

  /** One node's Patroni REST API. */
  patroniUrl(node: NodeName): string {
    return `http://${nodeAddress(node)}:${FAILOVER_PORTS.patroni[NODES.indexOf(node)]}`;
  }

  /** HAProxy in front of the service instances. */
  get url(): string {
    return `http://127.0.0.1:${FAILOVER_PORTS.service}`;
  }

  /** Service instance `index` (0, 1, 2). */
  instanceUrl(index: number): string {
    return `http://127.0.0.1:${FAILOVER_PORTS.instances[index]}`;
  }

  /** The NATS cluster's servers, as NATS_URL lists them. */
  get natsUrls(): string {
    return FAILOVER_PORTS.nats.map((port) => `nats://127.0.0.1:${port}`).join(",");
  }

  /** NATS server `index` (0, 1, 2) alone. */
  natsUrl(index: number): string {
    return `nats://127.0.0.1:${FAILOVER_PORTS.nats[index]}`;
  }

  /** The signing key every instance shares. */
  get jwtSecret(): string {
    return readFileSync(join(this.dir, "jwt-secret"), "utf8");
  }

  /** The environment of every instance: the write and read endpoints, the NATS cluster. */
  instanceEnv(): Record<string, string> {
    return {
      HOST: "127.0.0.1",
      DATABASE_URL: this.writeUrl(),
      DATABASE_READ_URLS: this.readUrl(),
      NATS_URL: this.natsUrls,
      JWT_SECRET: this.jwtSecret,
      LOG_LEVEL: "warn",
      APP_TIME_ZONE: "UTC",
      // Longer than a planned switchover leaves the write endpoint without a primary (2-7 s here).
      DB_RETRY_WITHIN_MS: "10000",
    };
  }

  // ---- the nodes' network ----

  /**
   * Makes the bridge, and for each node its network namespace and veth pair with its address,
   * in place of any left by a topology that was not stopped, but refuses while a process runs in
   * one of those namespaces (another topology is up); records that this directory's topology
   * made them, for `down`.
   */
  makeNetwork(): void {
    if (process.getuid?.() !== 0) {
      throw new Error(
        "the failover topology runs each PostgreSQL node in a network namespace: run it as root",
      );
    }
    const busy = NODES.map(namespaceOf).filter((namespace) => namespacePids(namespace).length > 0);
    if (busy.length > 0) {
      throw new Error(
        `processes run in the network namespaces ${busy.join(", ")}: another failover topology is up`,
      );
    }
    removeNetwork();
    writeFileSync(join(this.dir, NETWORK_RECORD), `${FAILOVER_NETWORK.bridge}\n`);
    const { bridge, host, subnet } = FAILOVER_NETWORK;
    const prefix = subnet.split("/")[1];
    ip("link", "add", bridge, "type", "bridge");
    ip("address", "add", `${host}/${prefix}`, "dev", bridge);
    ip("link", "set", bridge, "up");
    NODES.forEach((node, index) => {
      const namespace = namespaceOf(node);
      // The node's end is made under a name of the machine's, then moved into its namespace.
      const inside = `${namespace}n`;
      ip("netns", "add", namespace);
      ip("link", "add", linkOf(node), "type", "veth", "peer", "name", inside);
      ip("link", "set", inside, "netns", namespace);
      ip("link", "set", linkOf(node), "master", bridge, "up");
      ip("-n", namespace, "address", "add", `${FAILOVER_NETWORK.nodes[index]}/${prefix}`, "dev", inside);
      ip("-n", namespace, "link", "set", inside, "up");
      ip("-n", namespace, "link", "set", "lo", "up");
    });
  }

  /**
   * Removes the bridge, the veth pairs and the namespaces, if this directory's topology made
   * them (another topology's, started from another directory, is left alone).
   */
  removeNetwork(): void {
    if (!existsSync(join(this.dir, NETWORK_RECORD))) return;
    removeNetwork();
    rmSync(join(this.dir, NETWORK_RECORD), { force: true });
  }

  /** Cuts node `node` off from everything else, both ways, by taking its link down. */
  partition(node: NodeName): void {
    ip("link", "set", linkOf(node), "down");
  }

  /** Restores node `node`'s link (idempotent: a link already up stays up). */
  heal(node: NodeName): void {
    ip("link", "set", linkOf(node), "up");
  }

  /** Whether node `node`'s link is up (false: partitioned), undefined when there is none. */
  linkUp(node: NodeName): boolean | undefined {
    try {
      return /[<,]UP[,>]/.test(ip("-brief", "link", "show", linkOf(node)));
    } catch {
      return undefined;
    }
  }

  /** For an exit guard: SIGKILL to every recorded process, then the network removed, synchronously. */
  killAllNow(): void {
    this.processes.killAllNow();
    this.removeNetwork();
  }

  // ---- etcd ----

  /** Starts etcd member `index` (0, 1, 2) of a three-member cluster. */
  startEtcd(index: number): void {
    const name = `etcd${index + 1}`;
    const peers = FAILOVER_PORTS.etcdPeer.map((port, i) => `etcd${i + 1}=http://127.0.0.1:${port}`).join(",");
    const client = `http://127.0.0.1:${FAILOVER_PORTS.etcdClient[index]}`;
    // The nodes, each in its network namespace, reach etcd at the machine's address on their
    // bridge; Patroni's client asks for the members' advertised URLs and uses those.
    const clientForNodes = `http://${FAILOVER_NETWORK.host}:${FAILOVER_PORTS.etcdClient[index]}`;
    const peer = `http://127.0.0.1:${FAILOVER_PORTS.etcdPeer[index]}`;
    const dataDir = join(this.dir, name);
    this.processes.start({
      name,
      command: "etcd",
      args: [
        `--name=${name}`,
        `--data-dir=${dataDir}`,
        `--listen-client-urls=${client},${clientForNodes}`,
        `--advertise-client-urls=${clientForNodes}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=${peers}`,
        // A member that comes back after a kill finds its data directory and rejoins.
        `--initial-cluster-state=${existsSync(dataDir) ? "existing" : "new"}`,
        "--initial-cluster-token=posts-failover",
        "--log-level=warn",
        // Patroni's `etcd:` client speaks the v2 API, which etcd 3.4 serves only when asked.
        "--enable-v2=true",
      ],
    });
  }

  /** Waits until etcd's cluster has a leader and answers through member `index`. */
  async waitForEtcd(index = 0): Promise<void> {
    await until("etcd did not elect a leader", 60_000, async () => {
      const reply = await fetch(`http://127.0.0.1:${FAILOVER_PORTS.etcdClient[index]}/health`, {
        signal: AbortSignal.timeout(2000),
      });
      const health = (await reply.json()) as { health?: string };
      return health.health === "true" ? true : undefined;
    });
  }

  /** The index (0, 1, 2) of the member etcd's cluster names leader, asked of each member. */
  async etcdLeader(): Promise<number> {
    const statuses = await Promise.all(
      FAILOVER_PORTS.etcdClient.map(async (port) => {
        try {
          const reply = await fetch(`http://127.0.0.1:${port}/v3/maintenance/status`, {
            method: "POST",
            body: "{}",
            signal: AbortSignal.timeout(2000),
          });
          return (await reply.json()) as { header?: { member_id?: string }; leader?: string };
        } catch {
          return {};
        }
      }),
    );
    const index = statuses.findIndex(
      (status) => status.leader !== undefined && status.header?.member_id === status.leader,
    );
    if (index < 0) throw new Error("no etcd member is the leader");
    return index;
  }

  /** Whether every etcd member answers its health check as healthy. */
  async etcdWhole(): Promise<boolean> {
    const healthy = await Promise.all(
      FAILOVER_PORTS.etcdClient.map(async (port) => {
        try {
          const reply = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2000) });
          return ((await reply.json()) as { health?: string }).health === "true";
        } catch {
          return false;
        }
      }),
    );
    return healthy.every(Boolean);
  }

  // ---- Patroni and PostgreSQL ----

  /** Writes node `node`'s Patroni configuration (once) and starts Patroni, as the OS user postgres. */
  startPatroni(node: NodeName): number {
    const index = NODES.indexOf(node);
    const config = join(this.dir, `${node}.yml`);
    if (!existsSync(config)) {
      writeFileSync(config, this.#patroniConfig(node, index));
      chownToPostgres(config);
    }
    const patroni = asPostgres("patroni", [config]);
    // `ip netns exec` and setpriv each exec the next program: the pid recorded is Patroni's.
    return this.processes.start({
      name: `patroni-${node}`,
      command: "ip",
      args: ["netns", "exec", namespaceOf(node), patroni.command, ...patroni.args],
    });
  }

  #patroniConfig(node: NodeName, index: number): string {
    const postgresPort = FAILOVER_PORTS.postgres[index];
    const restPort = FAILOVER_PORTS.patroni[index];
    const address = FAILOVER_NETWORK.nodes[index];
    const etcdHosts = FAILOVER_PORTS.etcdClient.map((port) => `${FAILOVER_NETWORK.host}:${port}`).join(",");
    // JSON is YAML: no hand-written YAML quoting.
    return JSON.stringify(
      {
        scope: "posts-failover",
        name: node,
        log: { level: "WARNING" },
        restapi: { listen: `${address}:${restPort}`, connect_address: `${address}:${restPort}` },
        // The v2 API (`etcd:`), not v3 (`etcd3:`): Patroni 3.0.2's v3 client renews a lost leader
        // key with a plain put, so a leader frozen past its lease takes the key back from the one
        // elected meanwhile, whose acknowledged commits are then discarded (fixed in 3.0.3); its
        // v2 client renews with compare-and-swap and fails instead. FAILOVER_DCS=etcd3 shows it.
        [process.env.FAILOVER_DCS === "etcd3" ? "etcd3" : "etcd"]: { hosts: etcdHosts },
        bootstrap: {
          dcs: {
            ttl: PATRONI_TIMING.ttl,
            loop_wait: PATRONI_TIMING.loopWait,
            retry_timeout: PATRONI_TIMING.retryTimeout,
            maximum_lag_on_failover: 1048576,
            // A primary that crashed is not restarted in place while a replica could take over.
            primary_start_timeout: 0,
            // Every commit waits for one synchronous standby; with none, commits wait rather
            // than go on unreplicated (strict), so an acknowledged commit survives the primary.
            synchronous_mode: true,
            synchronous_mode_strict: true,
            postgresql: {
              use_pg_rewind: true,
              use_slots: true,
              parameters: {
                // pg_rewind needs hint bits in the WAL (or data checksums).
                wal_log_hints: "on",
                max_connections: 100,
                max_wal_senders: 10,
                max_replication_slots: 10,
                wal_keep_size: "256MB",
                hot_standby: "on",
                shared_buffers: "32MB",
                // A standby whose primary went away tries the new one every 500 ms, not every
                // 5 s: in a switchover the promotion waits out this interval too, and so do the
                // commits on the new primary, until a synchronous standby streams from it again.
                wal_retrieve_retry_interval: "500ms",
                // The logs' times in UTC whatever the zone the harness runs in (initdb takes
                // TZ's otherwise): the switchover test reads the shutdown's instant from them.
                log_timezone: "UTC",
              },
            },
          },
          initdb: [{ encoding: "UTF8" }, { locale: "C.UTF-8" }, { auth: "trust" }, "no-sync"],
        },
        postgresql: {
          listen: `${address}:${postgresPort}`,
          connect_address: `${address}:${postgresPort}`,
          data_dir: join(this.dir, node),
          bin_dir: pgBin(),
          pgpass: join(this.dir, `${node}.pgpass`),
          authentication: {
            superuser: { username: PG_USER },
            replication: { username: PG_USER },
            rewind: { username: PG_USER },
          },
          pg_hba: [
            "local all all trust",
            "host all all 127.0.0.1/32 trust",
            `host all all ${FAILOVER_NETWORK.subnet} trust`,
            `host replication all ${FAILOVER_NETWORK.subnet} trust`,
          ],
          parameters: {
            unix_socket_directories: this.dir,
            // Only processes are killed here, never the machine: what PostgreSQL wrote is in
            // the page cache either way, and the 2-core machine is spared the flushes.
            fsync: "off",
            log_min_messages: "warning",
          },
        },
      },
      null,
      2,
    );
  }

  /** Every member as Patroni sees the cluster, asked of any node that answers. */
  async members(): Promise<Member[]> {
    let last: unknown;
    for (const node of NODES) {
      try {
        const reply = await fetch(`${this.patroniUrl(node)}/cluster`, { signal: AbortSignal.timeout(2000) });
        if (reply.status !== 200) continue;
        return ((await reply.json()) as { members: Member[] }).members;
      } catch (error) {
        last = error;
      }
    }
    throw new Error(`no Patroni REST API answered${last instanceof Error ? `: ${last.message}` : ""}`);
  }

  /** The node Patroni names leader, if any. */
  async leader(): Promise<NodeName | undefined> {
    const leader = (await this.members()).find(
      (member) => member.role === "leader" && member.state === "running",
    );
    return leader?.name as NodeName | undefined;
  }

  /** Waits until one leader runs and the two other nodes run as replicas, one of them synchronous. */
  async waitForHealthyCluster(timeoutMs = 120_000): Promise<NodeName> {
    return until(
      "Patroni's cluster did not become a leader and two running replicas",
      timeoutMs,
      async () => {
        const members = await this.members();
        const leader = members.find((member) => member.role === "leader" && member.state === "running");
        const replicas = members.filter(
          (member) =>
            (member.role === "replica" || member.role === "sync_standby") &&
            (member.state === "running" || member.state === "streaming"),
        );
        const synchronous = replicas.some((member) => member.role === "sync_standby");
        return leader !== undefined && replicas.length === 2 && synchronous
          ? (leader.name as NodeName)
          : undefined;
      },
    );
  }

  /** The pid of node `node`'s postmaster, from its `postmaster.pid`, while it runs. */
  postmasterPid(node: NodeName): number | undefined {
    try {
      const pid = Number(readFileSync(join(this.dir, node, "postmaster.pid"), "utf8").split("\n")[0]);
      if (!(pid > 0) || !isAlive(pid)) return undefined;
      // A stale file may name a pid that another program has taken since.
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("postgres") ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  /** Kills node `node` (SIGKILL to its Patroni and every PostgreSQL process at once), as a crash. */
  killNode(node: NodeName): void {
    this.signalNode(node, "SIGKILL");
  }

  /** Freezes (SIGSTOP) or resumes (SIGCONT) node `node`'s Patroni and every PostgreSQL process. */
  pauseNode(node: NodeName, signal: "SIGSTOP" | "SIGCONT"): void {
    this.signalNode(node, signal);
  }

  /**
   * Sends `signal` to node `node`'s Patroni, its postmaster and each of the postmaster's
   * children (PostgreSQL makes each child a process group of its own, so no group signal reaches
   * them all), by pid: a frozen server answers nothing, on the connections it already has either.
   */
  signalNode(node: NodeName, signal: NodeJS.Signals): void {
    const postmaster = this.postmasterPid(node);
    const pids = postmaster === undefined ? [] : [postmaster, ...childrenOf(postmaster)];
    this.processes.signal(`patroni-${node}`, signal);
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        // Exited in between.
      }
    }
  }

  // ---- HAProxy ----

  /** Writes HAProxy's configuration and starts it in the foreground (no daemon), by pid. */
  async startHaproxy(): Promise<void> {
    const config = join(this.dir, "haproxy.cfg");
    const nodes = (check: string) =>
      NODES.map(
        (node, index) =>
          `  server ${node} ${FAILOVER_NETWORK.nodes[index]}:${FAILOVER_PORTS.postgres[index]} check port ${FAILOVER_PORTS.patroni[index]} ${check}`,
      );
    const database = (name: string, port: number, path: string) => [
      `listen ${name}`,
      `  bind 127.0.0.1:${port}`,
      "  mode tcp",
      // A pool's idle connection is not HAProxy's to close.
      "  timeout client 30m",
      "  timeout server 30m",
      `  option httpchk OPTIONS ${path}`,
      "  http-check expect status 200",
      // A node that stops being what the endpoint needs loses its sessions at once, so no
      // client goes on writing to a former primary.
      "  default-server inter 1s fastinter 500ms fall 2 rise 1 on-marked-down shutdown-sessions",
      ...nodes(""),
      "",
    ];
    writeFileSync(
      config,
      [
        ...haproxyDefaults(this.dir),
        ...database("postgres_write", FAILOVER_PORTS.write, "/primary"),
        ...database("postgres_read", FAILOVER_PORTS.read, "/replica"),
        ...serviceBalancer(FAILOVER_PORTS.service, FAILOVER_PORTS.instances),
      ].join("\n"),
    );
    const pid = this.processes.start({
      name: "haproxy",
      command: haproxyBinary(),
      args: ["-f", config, "-db"],
    });
    await until("the write endpoint did not reach the primary", 60_000, async () => {
      if (!isAlive(pid))
        throw new Error(`HAProxy exited; its log ends:\n${tailOf(join(this.dir, "haproxy.log"))}`);
      const [row] = await sql<{ recovery: boolean }>(
        this.writeUrl("postgres"),
        "SELECT pg_is_in_recovery() AS recovery",
      );
      return row?.recovery === false ? true : undefined;
    });
  }

  // ---- NATS ----

  /** Writes NATS server `index`'s configuration (once) and starts it, in a cluster with the other two. */
  startNats(index: number): number {
    const name = `nats${index + 1}`;
    const config = join(this.dir, `${name}.conf`);
    if (!existsSync(config)) {
      const routes = FAILOVER_PORTS.natsCluster.map((port) => `"nats-route://127.0.0.1:${port}"`).join(", ");
      writeFileSync(
        config,
        [
          `server_name: ${name}`,
          `listen: "127.0.0.1:${FAILOVER_PORTS.nats[index]}"`,
          `http: "127.0.0.1:${FAILOVER_PORTS.natsMonitor[index]}"`,
          `jetstream { store_dir: "${join(this.dir, name)}" }`,
          `cluster { name: posts-failover, listen: "127.0.0.1:${FAILOVER_PORTS.natsCluster[index]}", routes: [${routes}] }`,
          "",
        ].join("\n"),
      );
    }
    return this.processes.start({ name, command: natsBinary(), args: ["-c", config] });
  }

  /**
   * Makes the stream `POSTS` in three replicas, as an operator would before the service starts
   * (the service makes it when absent, and then as NATS's default, one replica).
   */
  async createStream(): Promise<void> {
    await until("the NATS cluster did not make the stream POSTS", 60_000, async () => {
      const connection = await connectNats({ servers: this.natsUrls.split(","), maxReconnectAttempts: 0 });
      try {
        const manager = await jetstreamManager(connection);
        const names = await manager.streams.names().next();
        if (!names.includes(STREAM_NAME)) {
          await manager.streams.add({
            name: STREAM_NAME,
            subjects: [SUBJECTS["post.created"].replace(/\.[^.]+$/, ".*")],
            storage: StorageType.File,
            num_replicas: 3,
          });
        }
        const info = await manager.streams.info(STREAM_NAME);
        return info.config.num_replicas === 3 && info.cluster?.leader !== undefined ? true : undefined;
      } finally {
        await connection.close();
      }
    });
  }

  /** The stream POSTS's leader and replicas, asked of `servers` (default: the three). */
  async streamCluster(servers = this.natsUrls): Promise<{ leader?: string; current: string[] }> {
    const connection = await connectNats({
      servers: servers.split(","),
      maxReconnectAttempts: 0,
      timeout: 2000,
    });
    try {
      const manager = await jetstreamManager(connection);
      const { cluster } = await manager.streams.info(STREAM_NAME);
      return {
        ...(cluster?.leader === undefined ? {} : { leader: cluster.leader }),
        current: (cluster?.replicas ?? [])
          .filter((replica) => replica.current)
          .map((replica) => replica.name),
      };
    } finally {
      await connection.close();
    }
  }

  /** The index (0, 1, 2) of the NATS server that leads the stream POSTS. */
  async streamLeader(): Promise<number> {
    const { leader } = await this.streamCluster();
    const index = leader === undefined ? -1 : Number(/^nats(\d)$/.exec(leader)?.[1]) - 1;
    if (!(index >= 0)) throw new Error(`the stream ${STREAM_NAME} has no leader (${leader})`);
    return index;
  }

  /** Whether the stream POSTS has a leader and both other replicas are current. */
  async streamWhole(): Promise<boolean> {
    const { leader, current } = await this.streamCluster();
    return leader !== undefined && current.length === 2;
  }

  // ---- service ----

  /** Starts instance `index` (0, 1, 2) and waits until /ready answers 200. */
  async startInstance(index: number): Promise<void> {
    const name = `instance${index + 1}`;
    await startServiceInstance(this.processes, name, FAILOVER_PORTS.instances[index] as number, {
      ...this.instanceEnv(),
      DATA_DIR: join(this.dir, name),
    });
  }

  /** Makes the service's database on the primary and migrates it through the write endpoint. */
  migrate(): Promise<void> {
    return sql(this.writeUrl("postgres"), `CREATE DATABASE ${DATABASE}`).then(() => {
      execFileSync(process.execPath, [join(ROOT, "packages/app/dist/main.js"), "migrate"], {
        cwd: ROOT,
        env: {
          ...process.env,
          DATABASE_URL: this.writeUrl(),
          JWT_SECRET: this.jwtSecret,
          DATA_DIR: join(this.dir, "migrate"),
          LOG_LEVEL: "warn",
        },
        stdio: ["ignore", "inherit", "inherit"],
      });
    });
  }

  /** Brings the whole topology up in its (empty) directory. */
  async start(): Promise<void> {
    const say = this.#say;
    say("building the service");
    buildService();
    say(
      `making the nodes' network (bridge ${FAILOVER_NETWORK.bridge}, ${FAILOVER_NETWORK.subnet}, a namespace per node)`,
    );
    this.makeNetwork();
    say("starting three etcd members");
    for (const index of [0, 1, 2]) this.startEtcd(index);
    await this.waitForEtcd();
    say("starting three NATS servers (JetStream cluster)");
    for (const index of [0, 1, 2]) this.startNats(index);
    say("starting Patroni on three nodes");
    this.startPatroni("pg1");
    // The first node bootstraps the cluster alone; the others then copy it (pg_basebackup).
    await until(
      "Patroni did not bootstrap a leader",
      120_000,
      async () => (await this.leader()) ?? undefined,
    );
    this.startPatroni("pg2");
    this.startPatroni("pg3");
    const leader = await this.waitForHealthyCluster();
    say(`Patroni leader: ${leader}`);
    say("starting HAProxy");
    await this.startHaproxy();
    say("making the stream POSTS in three replicas");
    await this.createStream();
    say("migrating the database through the write endpoint");
    await this.migrate();
    say("starting three service instances");
    await Promise.all([0, 1, 2].map((index) => this.startInstance(index)));
    await until("HAProxy did not route to a ready instance", 30_000, async () => {
      const reply = await fetch(`${this.url}/ready`, { signal: AbortSignal.timeout(2000) });
      return reply.status === 200 ? true : undefined;
    });
  }

  /**
   * Stops every process of the topology by its pid, newest first (instances, HAProxy, Patroni,
   * NATS, etcd), each postmaster Patroni started included, whatever faults left them in; then
   * removes the nodes' network.
   */
  async down(): Promise<void> {
    // Patroni stops its own postmaster on SIGTERM; one that outlived its Patroni (killed, or a
    // node Patroni restarted) is recorded here so it is stopped by its pid as well.
    const entries = this.processes.entries();
    for (const node of NODES) {
      const pid = this.postmasterPid(node);
      if (pid !== undefined && entries[`postmaster-${node}`]?.pid !== pid) {
        this.processes.adopt(`postmaster-${node}`, pid, "SIGQUIT");
      }
    }
    await this.processes.stopAll();
    this.removeNetwork();
  }
}

/**
 * Makes and starts the failover topology in `dir` (made if absent, must be empty): installs
 * Patroni, etcd, HAProxy and nats-server from Debian if absent, builds the service and starts
 * every process. On failure, stops whatever it started and throws.
 */
export async function startFailoverTopology(options: {
  readonly dir: string;
  readonly say?: (line: string) => void;
}): Promise<FailoverTopology> {
  const say = options.say ?? (() => {});
  mkdirSync(options.dir, { recursive: true });
  if (readdirSync(options.dir).length > 0) throw new Error(`${options.dir} is not empty`);
  // Patroni and PostgreSQL, running as postgres, keep their data, sockets and logs here.
  chownToPostgres(options.dir);
  chmodSync(options.dir, 0o755);
  ensurePackages(say, PACKAGES);
  writeFileSync(join(options.dir, "jwt-secret"), randomBytes(48).toString("base64url"), { mode: 0o600 });
  const topology = new FailoverTopology(options.dir, { say });
  try {
    await topology.start();
    return topology;
  } catch (error) {
    await topology.down();
    throw error;
  }
}

/** The file that says the topology of its directory made the nodes' network. */
const NETWORK_RECORD = "network";

/** The address of node `node` on the bridge. */
export function nodeAddress(node: NodeName): string {
  return FAILOVER_NETWORK.nodes[NODES.indexOf(node)] as string;
}

/** Node `node`'s network namespace. */
function namespaceOf(node: NodeName): string {
  return `${FAILOVER_NETWORK.bridge}-${node}`;
}

/** The machine's end of node `node`'s veth pair, a port of the bridge. */
function linkOf(node: NodeName): string {
  return `${FAILOVER_NETWORK.bridge}-${node}`;
}

function ip(...args: string[]): string {
  return execFileSync("ip", args, { stdio: ["ignore", "pipe", "pipe"] }).toString();
}

/** The pids of the processes in network namespace `namespace` (none when it does not exist). */
function namespacePids(namespace: string): number[] {
  try {
    return ip("netns", "pids", namespace).split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Removes the veth pairs, the namespaces and the bridge by their names, whichever exist. A
 * namespace still holding a process lives on, unnamed, until that process exits; its veth pair
 * is gone already.
 */
function removeNetwork(): void {
  const attempt = (...args: string[]) => {
    try {
      ip(...args);
    } catch {
      // Not there: nothing to remove.
    }
  };
  for (const node of NODES) {
    attempt("link", "delete", linkOf(node));
    attempt("netns", "delete", namespaceOf(node));
  }
  attempt("link", "delete", FAILOVER_NETWORK.bridge);
}

/** The processes whose parent is `pid`, from /proc (field 4 of each stat, after the command's parentheses). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) children.push(Number(entry));
    } catch {
      // Exited while listed.
    }
  }
  return children;
}

function natsBinary(): string {
  return existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server";
}
