import {
  createPostgresDatabase,
  type DatabaseHandle,
  isDatabaseUnavailable,
  PostgresPostRepository,
  PostgresUserRepository,
} from "@posts/adapters-postgres";
import { LocalCluster, type LocalServer, postgresBinariesForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { primaryWithAnAuthor } from "./primary-with-an-author.js";

// A primary whose synchronous standby is not there: every commit waits for it until cancelled.
const PRIMARY_PORT = 24501;
const APPLICATION = "sync-commit-under-test";
const STATEMENT_TIMEOUT_MS = 200;

describeNeeding(
  postgresBinariesForTests(),
  "commits whose wait for the synchronous standby is cancelled",
  () => {
    let cluster: LocalCluster;
    let primary: LocalServer;
    let admin: DatabaseHandle;
    let database: DatabaseHandle;
    let posts: PostgresPostRepository;
    let authorId: number;
    let postId: number;

    /** The backends of the pool under test that wait for the synchronous standby. */
    const waiting = async (): Promise<number[]> => {
      const { rows } = await sql<{ pid: number }>`
      SELECT pid FROM pg_stat_activity WHERE application_name = ${APPLICATION} AND wait_event = 'SyncRep'`.execute(
        admin.db,
      );
      return rows.map((row) => row.pid);
    };
    /** Waits until `count` backends wait for the standby, then ends their wait with `how`. */
    const endTheWait = async (how: "pg_cancel_backend" | "pg_terminate_backend", count = 1) => {
      await expect.poll(waiting, { timeout: 10_000, interval: 50 }).toHaveLength(count);
      for (const pid of await waiting()) await sql`SELECT ${sql.raw(how)}(${pid}::int)`.execute(admin.db);
    };
    /** What `promise` fails with (undefined when it succeeds), observed from the start so that no failure goes unhandled. */
    const failureOf = (promise: Promise<unknown>): Promise<unknown> =>
      promise.then(
        () => undefined,
        (error: unknown) => error,
      );
    const rowsOf = async (table: "posts" | "users", where: string) => {
      const { rows } = await sql<{ count: number }>`
      SELECT count(*)::int AS count FROM ${sql.table(table)} WHERE ${sql.raw(where)}`.execute(admin.db);
      return rows[0]?.count;
    };

    beforeAll(async () => {
      cluster = new LocalCluster();
      ({ server: primary, admin, authorId } = await primaryWithAnAuthor(cluster, PRIMARY_PORT));
      const post = await new PostgresPostRepository(admin.db).create({
        authorId,
        title: "before",
        content: "c",
        createdAt: new Date(),
      });
      postId = post?.id as number;
      // From now on every commit waits for a standby named ghost, which never connects. The
      // admin's statements below commit nothing (reads, cancels).
      await sql`ALTER SYSTEM SET synchronous_standby_names = 'ghost'`.execute(admin.db);
      await sql`SELECT pg_reload_conf()`.execute(admin.db);
      database = createPostgresDatabase({
        connectionString: primary.url(),
        applicationName: APPLICATION,
        // The server's statement timeout is short, the client's read timeout long: what cuts the
        // wait short is then the server or nothing.
        statementTimeoutMillis: STATEMENT_TIMEOUT_MS,
        queryTimeoutMillis: 30_000,
      });
      posts = new PostgresPostRepository(database.db);
    }, 60_000);

    afterAll(async () => {
      await database?.close();
      await admin?.close();
      await cluster?.stopAll();
    });

    it("fails a creation (a statement committing on its own) with an unavailable error when its wait is cancelled", async () => {
      const created = failureOf(
        posts.create({ authorId, title: "cancelled", content: "c", createdAt: new Date() }),
      );
      await endTheWait("pg_cancel_backend");
      const failure = await created;
      expect(failure).toBeInstanceOf(Error);
      expect(isDatabaseUnavailable(failure)).toBe(true);
      // PostgreSQL committed it locally: it is there, but it was never acknowledged.
      expect(await rowsOf("posts", "title = 'cancelled'")).toBe(1);
    });

    it("fails a change (one statement, committing on its own) with an unavailable error when its wait is cancelled", async () => {
      const updated = failureOf(
        posts.update({ id: postId, authorId, changes: { title: "changed" }, now: new Date() }),
      );
      await endTheWait("pg_cancel_backend");
      expect(isDatabaseUnavailable(await updated)).toBe(true);
    });

    it("fails a transaction's COMMIT with an unavailable error when its wait is cancelled", async () => {
      const committed = failureOf(
        database.db.transaction().execute(async (trx) => {
          await sql`UPDATE posts SET title = 'in a transaction' WHERE id = ${postId}`.execute(trx);
        }),
      );
      await endTheWait("pg_cancel_backend");
      expect(isDatabaseUnavailable(await committed)).toBe(true);
    });

    it("fails a registration with an unavailable error when its session is terminated during the wait", async () => {
      const users = new PostgresUserRepository(database.db);
      const registered = failureOf(
        users.create({ email: "terminated@example.com", passwordHash: "h", createdAt: new Date() }),
      );
      await endTheWait("pg_terminate_backend");
      expect(isDatabaseUnavailable(await registered)).toBe(true);
    });

    it("is not cut short by the statement timeout: the commit waits for the standby well past it", async () => {
      let settled = false;
      const created = failureOf(
        posts.create({ authorId, title: "waits", content: "c", createdAt: new Date() }),
      ).finally(() => {
        settled = true;
      });
      await expect.poll(waiting, { timeout: 10_000, interval: 50 }).toHaveLength(1);
      // Five statement timeouts later, the same backend still waits and the caller has no answer.
      const [before] = await waiting();
      await new Promise((resolve) => setTimeout(resolve, 5 * STATEMENT_TIMEOUT_MS));
      expect(await waiting()).toEqual([before]);
      expect(settled).toBe(false);
      await endTheWait("pg_cancel_backend");
      expect(isDatabaseUnavailable(await created)).toBe(true);
    });

    it("answers a commit the standby confirms as before, once the primary stops waiting for one", async () => {
      await sql`ALTER SYSTEM RESET synchronous_standby_names`.execute(admin.db);
      await sql`SELECT pg_reload_conf()`.execute(admin.db);
      await expect
        .poll(
          async () =>
            (
              await sql<{
                names: string;
              }>`SELECT current_setting('synchronous_standby_names') AS names`.execute(database.db)
            ).rows[0]?.names,
        )
        .toBe("");
      const created = await posts.create({
        authorId,
        title: "confirmed",
        content: "c",
        createdAt: new Date(),
      });
      expect(created?.title).toBe("confirmed");
    });
  },
);
