import pg from "pg";

// The shapes of the relay's `Lease` and `PublisherLease` (adapters-nats's ports), declared here in
// this adapter's words because adapters never import one another; the app hands this lease to the
// relay, so the compiler checks that the two still agree.

/** Held by at most one process at a time, for as long as its connection to the database lives. */
export interface DatabaseLease {
  /** Aborts when the lease is lost: its connection died or stopped answering. */
  readonly lost: AbortSignal;
  /** Gives the lease up (unlocks, then closes its connection); another may take it once this resolves. Idempotent. */
  release(): Promise<void>;
}

/** Where the instances sharing a database compete for one role, such as publishing events. */
export interface DatabaseLeaseArbiter {
  /**
   * Takes the lease when no other session holds it, or answers `undefined`. Rejects when the
   * database cannot be reached.
   */
  acquire(): Promise<DatabaseLease | undefined>;
}

/** How {@link PostgresPublisherLease} reaches the server and watches its connection. */
export interface PostgresPublisherLeaseOptions {
  /** The same `postgres://…` URL as the instances' pool. */
  readonly connectionString: string;
  /**
   * The advisory lock's key, one per role in the database. Default: the event relay's,
   * {@link EVENT_RELAY_LOCK_KEY}.
   */
  readonly lockKey?: bigint;
  /**
   * How often the holder checks that its connection still answers; a connection silently cut
   * (no reset seen) is noticed within this plus `connectTimeoutMs`. Default 2000 ms.
   */
  readonly heartbeatMs?: number;
  /** Longest wait for connecting and for each statement. Default 3000 ms. */
  readonly connectTimeoutMs?: number;
  /** Shown in `pg_stat_activity`. Default `posts-event-relay`. */
  readonly applicationName?: string;
}

/** The advisory lock key of the event relay: "posts.ev" in ASCII, a number no other role uses. */
export const EVENT_RELAY_LOCK_KEY = 0x706f7374732e6576n;

/**
 * A lease on a PostgreSQL server: a session-level advisory lock (`pg_try_advisory_lock`) held on
 * a connection of its own, outside the pool. The server releases it the moment that session
 * ends, so a holder killed with SIGKILL, or whose connection drops, hands it over; the holder
 * learns of a lost connection from the driver, or at the latest from its heartbeat.
 * A process waiting for the lease keeps one connection open between attempts.
 */
export class PostgresPublisherLease implements DatabaseLeaseArbiter {
  readonly #options: PostgresPublisherLeaseOptions;
  #waiting: pg.Client | undefined;

  constructor(options: PostgresPublisherLeaseOptions) {
    this.#options = options;
  }

  async acquire(): Promise<DatabaseLease | undefined> {
    const client = this.#waiting ?? (await this.#connect());
    this.#waiting = undefined;
    let held: boolean;
    try {
      const result = await client.query<{ held: boolean }>(
        "SELECT pg_try_advisory_lock($1::bigint) AS held",
        [String(this.#options.lockKey ?? EVENT_RELAY_LOCK_KEY)],
      );
      held = result.rows[0]?.held === true;
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (!held) {
      this.#waiting = client;
      return undefined;
    }
    return this.#hold(client);
  }

  /** Closes the connection kept between attempts, if any. */
  async close(): Promise<void> {
    const client = this.#waiting;
    this.#waiting = undefined;
    await client?.end().catch(() => undefined);
  }

  async #connect(): Promise<pg.Client> {
    const timeout = this.#options.connectTimeoutMs ?? 3000;
    const client = new pg.Client({
      connectionString: this.#options.connectionString,
      connectionTimeoutMillis: timeout,
      query_timeout: timeout,
      application_name: this.#options.applicationName ?? "posts-event-relay",
      keepAlive: true,
    });
    // Without a listener an error on an idle connection would crash the process.
    client.on("error", () => {
      if (this.#waiting === client) this.#waiting = undefined;
    });
    client.on("end", () => {
      if (this.#waiting === client) this.#waiting = undefined;
    });
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    return client;
  }

  #hold(client: pg.Client): DatabaseLease {
    const key = this.#options.lockKey ?? EVENT_RELAY_LOCK_KEY;
    const lost = new AbortController();
    const lose = (reason: string): Promise<void> => {
      if (lost.signal.aborted) return Promise.resolve();
      clearInterval(heartbeat);
      lost.abort(new Error(reason));
      return client.end().catch(() => undefined);
    };
    client.on("error", (error) => void lose(`the lease's connection failed: ${error.message}`));
    client.on("end", () => void lose("the lease's connection ended"));
    const heartbeat = setInterval(() => {
      client
        .query("SELECT 1")
        .catch((error: Error) => void lose(`the lease's connection stopped answering: ${error.message}`));
    }, this.#options.heartbeatMs ?? 2000);
    heartbeat.unref();
    return {
      lost: lost.signal,
      release: async () => {
        if (lost.signal.aborted) return;
        // Unlocked on the server before the answer comes back: the session's end is noticed later,
        // and another instance asking in between would still find the lock taken.
        await client.query("SELECT pg_advisory_unlock($1::bigint)", [String(key)]).catch(() => undefined);
        await lose("released");
      },
    };
  }
}

/**
 * The lease of an embedded database: PGlite lives in one process, which is the only instance
 * there can be, so it always holds the lease and never loses it.
 */
export const embeddedPublisherLease: DatabaseLeaseArbiter = {
  acquire: async () => ({ lost: new AbortController().signal, release: async () => undefined }),
};
