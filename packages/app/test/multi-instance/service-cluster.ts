import { randomBytes } from "node:crypto";
import { openTestDatabase, type TestDatabase } from "@posts/adapters-postgres/testing";
import { afterAll, beforeAll } from "vitest";
import { jsonRequest } from "../reliability/api-client.js";
import { type ListeningService, startService, TEST_JWT_SECRET } from "../support/service-process.js";

/** Several instances of the service, as real processes, on one PostgreSQL database. */
export interface ServiceCluster {
  /**
   * The test's own connection to the instances' database, for checks below the API. The schema
   * in it is the one the instances made: the database was empty when they started.
   */
  readonly database: TestDatabase;
  /** The instances, in the order of the client's turns. */
  readonly instances: readonly ListeningService[];
  /** Sends each request to the next instance in turn. */
  readonly client: RoundRobinClient;
  /** Stops the instances still running (SIGTERM) and drops the database. */
  close(): Promise<void>;
}

/** Options of {@link startCluster}. */
export interface ServiceClusterOptions {
  /** How many instances. */
  readonly size: number;
  /** Added to every instance's environment (e.g. `LOGIN_THROTTLE_MAX`). */
  readonly env?: Record<string, string>;
}

/**
 * Creates an empty database on the tests' PostgreSQL server and starts `size` instances on it at the
 * same moment, as an orchestrator scaling out does: they race to migrate it, and all must come
 * up. Every instance gets the same JWT_SECRET, as several instances behind a load balancer must.
 * Rejects when the server is not PostgreSQL (PGlite cannot be shared between processes) or an
 * instance does not start; what was started is stopped then.
 */
export async function startCluster(options: ServiceClusterOptions): Promise<ServiceCluster> {
  const database = await openTestDatabase("postgres", { migrate: false });
  const closeAll = async (instances: readonly ListeningService[]) => {
    await Promise.all(instances.map((instance) => instance.stop()));
    await database.close();
  };
  if (database.connectionString === undefined) {
    await database.close();
    throw new Error(`several instances need a PostgreSQL server, got ${database.engine}`);
  }
  const env = {
    DATABASE_URL: database.connectionString,
    JWT_SECRET: TEST_JWT_SECRET,
    // Three instances with the default ten connections each, on a server other suites share.
    DB_POOL_SIZE: "4",
    ...options.env,
  };
  const starting = Array.from({ length: options.size }, () => startService(env));
  const results = await Promise.allSettled(starting);
  const instances = results.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  const failed = results.find((result) => result.status === "rejected");
  if (failed !== undefined) {
    await closeAll(instances);
    throw failed.reason;
  }
  return {
    database,
    instances,
    client: new RoundRobinClient(instances.map((instance) => instance.url)),
    close: () => closeAll(instances),
  };
}

/** A cluster for the enclosing describe block: started before its first test, closed after its last. */
export function useCluster(options: ServiceClusterOptions): () => ServiceCluster {
  let cluster: ServiceCluster | undefined;
  beforeAll(async () => {
    cluster = await startCluster(options);
  });
  afterAll(async () => {
    await cluster?.close();
  });
  return () => {
    if (cluster === undefined) throw new Error("the cluster did not start");
    return cluster;
  };
}

/** A response, and which instance (index into the cluster's instances) it came from. */
export interface ClusterResponse {
  readonly instance: number;
  readonly response: Response;
}

/**
 * A client behind a round-robin load balancer: each request goes to the next instance in turn,
 * so consecutive requests of one client land on different instances.
 */
export class RoundRobinClient {
  readonly #urls: readonly string[];
  #turn = 0;

  constructor(urls: readonly string[]) {
    if (urls.length === 0) throw new RangeError("a round robin needs at least one instance");
    this.#urls = urls;
  }

  /** The instance the next request goes to; taking it moves the turn on. */
  take(): number {
    const instance = this.#turn;
    this.#turn = (this.#turn + 1) % this.#urls.length;
    return instance;
  }

  /** Sends the request to `path` (e.g. `/api/v1/posts`) on the next instance in turn. */
  fetch(path: string, init?: RequestInit): Promise<ClusterResponse> {
    return this.fetchOn(this.take(), path, init);
  }

  /** Sends the request to `path` on one chosen instance, leaving the turn as it is. */
  async fetchOn(instance: number, path: string, init?: RequestInit): Promise<ClusterResponse> {
    const url = this.#urls[instance];
    if (url === undefined) throw new RangeError(`no instance ${instance}`);
    return { instance, response: await fetch(`${url}${path}`, init) };
  }
}

/** A user registered through a cluster, with a token from its login. */
export interface ClusterUser {
  readonly id: number;
  readonly email: string;
  readonly password: string;
  readonly token: string;
  /** The instances that answered the registration and the login, in that order. */
  readonly answeredBy: readonly [registration: number, login: number];
}

/** Registers a new user and logs in through `client`, one request each, as a client would. */
export async function signUpThrough(client: RoundRobinClient): Promise<ClusterUser> {
  const email = `cluster-${randomBytes(6).toString("hex")}@example.com`;
  const password = "cluster password";
  const registered = await client.fetch("/api/v1/user", jsonRequest("POST", { email, password }));
  if (registered.response.status !== 201)
    throw new Error(`registration answered ${registered.response.status}`);
  const { id } = (await registered.response.json()) as { id: number };
  const loggedIn = await client.fetch("/api/v1/user/login", jsonRequest("POST", { email, password }));
  if (loggedIn.response.status !== 200) throw new Error(`login answered ${loggedIn.response.status}`);
  const { token } = (await loggedIn.response.json()) as { token: string };
  return { id, email, password, token, answeredBy: [registered.instance, loggedIn.instance] };
}
