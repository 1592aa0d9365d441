import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";
import { createPostgresDatabase, isDatabaseUnavailable } from "@posts/adapters-postgres";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { postgres, serverUrl, useTestDatabase } from "../use-test-database.js";

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a failure");
    },
    (error: unknown) => error,
  );

/** Polls `condition` until it holds; fails naming `what` after 5 s. */
const until = (condition: () => boolean | Promise<boolean>, what: string) =>
  expect
    .poll(condition, { interval: 20, timeout: 5000, message: `timed out waiting until ${what}` })
    .toBe(true);

/** A TCP relay to the server whose connections the test can reset, as a network failure does. */
class ResettingRelay {
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server) {}

  static async start(host: string, port: number): Promise<ResettingRelay> {
    const server = createServer();
    const relay = new ResettingRelay(server);
    server.on("connection", (client) => {
      const upstream = tcpConnect(port, host);
      for (const socket of [client, upstream]) {
        relay.sockets.add(socket);
        socket.on("error", () => {});
        socket.on("close", () => relay.sockets.delete(socket));
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return relay;
  }

  /** `connectionString` with its host and port replaced by the relay's. */
  relayed(connectionString: string): string {
    const url = new URL(connectionString);
    url.hostname = "127.0.0.1";
    url.port = String((this.server.address() as { port: number }).port);
    return url.toString();
  }

  /** Resets every connection carried so far; new ones go through. */
  resetAll(): void {
    for (const socket of this.sockets) socket.resetAndDestroy();
  }

  async close(): Promise<void> {
    this.resetAll();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

describeNeeding(postgres, "a pooled connection that fails while checked out", () => {
  const database = useTestDatabase("postgres");
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const open = (connectionString: string, applicationName: string, errors: Error[]) => {
    const handle = createPostgresDatabase({
      connectionString,
      applicationName,
      poolSize: 1,
      onIdleClientError: (error) => errors.push(error),
    });
    cleanups.push(() => handle.close());
    return handle;
  };
  const terminate = (applicationName: string) =>
    sql<{ terminated: boolean }>`
      SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
      WHERE application_name = ${applicationName}`.execute(database().db);

  it("does not crash the process when the server ends it between statements, and reports it once", async () => {
    const errors: Error[] = [];
    const { db } = open(serverUrl(database()), "terminated-while-checked-out", errors);

    const next = await db.connection().execute(async (connection) => {
      await sql`SELECT 1`.execute(connection);
      // No statement is running: pg emits the server's 57P01 as an "error" event of the client.
      expect((await terminate("terminated-while-checked-out")).rows).toEqual([{ terminated: true }]);
      await until(() => errors.length > 0, "the listener is told");
      return failureOf(sql`SELECT 1`.execute(connection));
    });

    expect(isDatabaseUnavailable(next)).toBe(true);
    expect(errors).toHaveLength(1);
    expect(isDatabaseUnavailable(errors[0])).toBe(true);
    // The broken connection went back to the pool, which discarded it and opens a new one.
    expect((await sql<{ one: number }>`SELECT 1 AS one`.execute(db)).rows).toEqual([{ one: 1 }]);
  });

  it("fails the statement it cuts short with an unavailability error, and the pool serves the next ones", async () => {
    const url = new URL(serverUrl(database()));
    const relay = await ResettingRelay.start(url.hostname, Number(url.port || 5432));
    cleanups.push(() => relay.close());
    const errors: Error[] = [];
    const { db } = open(relay.relayed(url.toString()), "reset-while-busy", errors);

    const running = failureOf(sql`SELECT pg_sleep(10)`.execute(db));
    await until(
      async () =>
        (
          await sql<{ n: number }>`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE application_name = 'reset-while-busy' AND state = 'active'`.execute(database().db)
        ).rows[0]?.n === 1,
      "the statement runs",
    );
    relay.resetAll();

    const error = await running;
    expect((error as { code?: string }).code).toBe("ECONNRESET");
    expect(isDatabaseUnavailable(error)).toBe(true);
    await until(() => errors.length > 0, "the listener is told");
    expect(errors).toHaveLength(1);
    expect((await sql<{ one: number }>`SELECT 1 AS one`.execute(db)).rows).toEqual([{ one: 1 }]);
    await terminate("reset-while-busy");
  });
});
