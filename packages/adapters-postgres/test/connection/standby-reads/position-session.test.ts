import { openTestDatabase, type TestDatabase } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import pg from "pg";
import { afterAll, afterEach, beforeAll, expect, it, vi } from "vitest";
import { positionSession } from "../../../src/connection/standby-reads/position-session.js";
import { ListenSession } from "../../../src/notifications/listen-session.js";
import { postgres, serverUrl } from "../../use-test-database.js";

// The listening session also runs the primary-position statement of the standby reads, prepared
// once; the standby reads themselves are tested on real standbys in scripts/topology.
describeNeeding(postgres, "statements on the listening session", () => {
  let database: TestDatabase;
  let observer: pg.Client;
  const sessions: ListenSession[] = [];

  beforeAll(async () => {
    database = await openTestDatabase("postgres", { migrate: false });
    observer = new pg.Client(serverUrl(database));
    await observer.connect();
  });
  afterEach(async () => {
    await Promise.all(sessions.splice(0).map((session) => session.close()));
  });
  afterAll(async () => {
    await observer?.end();
    await database?.close();
  });

  let opened = 0;
  /** A session with an application name of its own, so that pg_stat_activity tells it apart. */
  const open = (queryTimeoutMillis?: number) => {
    opened += 1;
    const applicationName = `session-statements-${process.pid}-${opened}`;
    const session = new ListenSession({
      connectionString: serverUrl(database),
      applicationName,
    });
    sessions.push(session);
    return { prepared: positionSession(session, queryTimeoutMillis), applicationName };
  };

  /** Calls `prepared` until the session is open and answers, for at most 5 s. */
  const once = async <Row>(session: ReturnType<typeof open>, name: string, text: string): Promise<Row[]> => {
    // Wrapped, so that waitFor retries only while the session is not open, not a failed statement.
    const { answer } = await vi.waitFor(
      () => {
        const answer = session.prepared(name, text);
        if (answer === undefined) throw new Error("the session did not open within 5 s");
        return { answer };
      },
      { timeout: 5000, interval: 10 },
    );
    return (await answer) as Row[];
  };

  const backendsOf = async (applicationName: string) =>
    (
      await observer.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [
        applicationName,
      ])
    ).rows.map((row) => row.pid);

  it("answers undefined until the session is open, then runs each statement prepared, on that one server process", async () => {
    const session = open();
    // Not open yet: the caller asks its pool, and the session opens for the calls to come.
    expect(session.prepared("probe_pid", "SELECT pg_backend_pid() AS pid")).toBeUndefined();
    const [first] = await once<{ pid: number }>(session, "probe_pid", "SELECT pg_backend_pid() AS pid");
    const [second] = await once<{ pid: number }>(session, "probe_pid", "SELECT pg_backend_pid() AS pid");
    expect(second?.pid).toBe(first?.pid);
    expect(await backendsOf(session.applicationName)).toEqual([first?.pid]);
    // Prepared on the server under the names given, not sent unnamed.
    const prepared = await once<{ name: string }>(
      session,
      "probe_names",
      "SELECT name FROM pg_prepared_statements ORDER BY name",
    );
    expect(prepared.map((row) => row.name)).toEqual(["probe_names", "probe_pid"]);
  });

  it("opens a new session when the server ends it, answering undefined or failing meanwhile", async () => {
    const session = open();
    const [before] = await once<{ pid: number }>(session, "probe_pid", "SELECT pg_backend_pid() AS pid");
    await observer.query("SELECT pg_terminate_backend($1)", [before?.pid]);
    let failed = 0;
    const after = await vi.waitFor(
      async () => {
        const answer = session.prepared("probe_pid", "SELECT pg_backend_pid() AS pid");
        if (answer === undefined) throw new Error("the session is not open yet");
        let pid: number | undefined;
        try {
          pid = ((await answer) as { pid: number }[])[0]?.pid;
        } catch (error) {
          failed += 1;
          throw error;
        }
        expect(pid).toBeDefined();
        expect(pid, "no new session").not.toBe(before?.pid);
        return pid;
      },
      { timeout: 5000, interval: 10 },
    );
    // The one statement the ended session was asked, at most, failed: none after it.
    expect(failed).toBeLessThanOrEqual(1);
    expect(await backendsOf(session.applicationName)).toEqual([after]);
  });

  it("drops a session whose statement outlives the query timeout, and answers on a new one", async () => {
    const session = open(300);
    const [before] = await once<{ pid: number }>(session, "probe_pid", "SELECT pg_backend_pid() AS pid");
    await expect(once(session, "probe_sleep", "SELECT pg_sleep(2)")).rejects.toThrow("Query read timeout");
    const [after] = await once<{ pid: number }>(session, "probe_pid", "SELECT pg_backend_pid() AS pid");
    expect(after?.pid).not.toBe(before?.pid);
  });

  it("runs no more prepared statements on a session that refused one, so that the pool answers", async () => {
    const session = open();
    // A server session that already holds a statement of that name, as one a pooler handed
    // over from an earlier client might: pg does not know it, and the server refuses (42P05).
    await once(session, "probe_prepare", "PREPARE probe_taken AS SELECT 1");
    await expect(once(session, "probe_taken", "SELECT 2")).rejects.toMatchObject({ code: "42P05" });
    expect(session.prepared("probe_pid", "SELECT pg_backend_pid() AS pid")).toBeUndefined();
  });
});
