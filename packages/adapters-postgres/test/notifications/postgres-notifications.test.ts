import { createPostgresDatabase, type DatabaseHandle } from "@posts/adapters-postgres";
import { openTestDatabase, type TestDatabase } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { postgres, serverUrl } from "../use-test-database.js";

// PostgreSQL delivers a NOTIFY only to listeners connected to the same database, so a listener
// that hears the second database's notification and not the first's is connected to the second.
describeNeeding(postgres, "the LISTEN connection of a PostgreSQL handle", () => {
  let pooled: TestDatabase;
  let other: TestDatabase;
  const handles: DatabaseHandle[] = [];

  beforeAll(async () => {
    pooled = await openTestDatabase("postgres", { migrate: false });
    other = await openTestDatabase("postgres", { migrate: false });
  });
  afterAll(async () => {
    await Promise.all(handles.map((handle) => handle.close()));
    await pooled?.close();
    await other?.close();
  });

  const open = (listenConnectionString?: string, onIdleClientError?: (error: Error) => void) => {
    const handle = createPostgresDatabase({
      connectionString: serverUrl(pooled),
      ...(listenConnectionString === undefined ? {} : { listenConnectionString }),
      ...(onIdleClientError === undefined ? {} : { onIdleClientError }),
    });
    handles.push(handle);
    return handle;
  };

  /** Listens on `channel` with `handle` and answers what it has heard so far. */
  const hear = async (handle: DatabaseHandle, channel: string) => {
    const heard: (string | undefined)[] = [];
    await handle.notifications?.listen(channel, (payload) => heard.push(payload));
    return heard;
  };

  const until = (what: string, done: () => boolean) =>
    expect.poll(done, { interval: 20, timeout: 5000, message: `${what} within 5 s` }).toBe(true);

  it("listens on the listen URL's database, not the pool's, when one is given", async () => {
    const handle = open(serverUrl(other));
    const heard = await hear(handle, "probe_listen_url");
    // Sent first, on the pool's database: a listener there would hear it before the second.
    await sql`SELECT pg_notify('probe_listen_url', 'pool database')`.execute(handle.db);
    await sql`SELECT pg_notify('probe_listen_url', 'listen database')`.execute(other.db);
    await until("the listen database's notification was not heard", () => heard.length > 0);
    // One more round trip on the pool's side, in case its notification were merely late.
    await sql`SELECT pg_notify('probe_listen_url', 'pool database again')`.execute(handle.db);
    await sql`SELECT pg_notify('probe_listen_url', 'listen database again')`.execute(other.db);
    await until("the second notification was not heard", () => heard.length > 1);
    expect(heard).toEqual(["listen database", "listen database again"]);
  });

  it("listens on the pool's own URL when none is given", async () => {
    const handle = open();
    const heard = await hear(handle, "probe_default");
    await sql`SELECT pg_notify('probe_default', 'listen database')`.execute(other.db);
    await sql`SELECT pg_notify('probe_default', 'pool database')`.execute(handle.db);
    await until("the pool database's notification was not heard", () => heard.length > 0);
    expect(heard).toEqual(["pool database"]);
  });

  it("reports a listen URL that does not answer, while the pool goes on answering", async () => {
    const errors: Error[] = [];
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    const handle = open("postgres://postgres@127.0.0.1:1/nowhere", (error) => errors.push(error));
    await hear(handle, "probe_unreachable");
    expect(errors.map((error) => (error as { code?: string }).code)).toContain("ECONNREFUSED");
    const { rows } = await sql<{ answer: number }>`SELECT 1 AS answer`.execute(handle.db);
    expect(rows).toEqual([{ answer: 1 }]);
  });
});
