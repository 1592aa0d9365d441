import { randomBytes } from "node:crypto";
import { JwtTokenIssuer } from "@posts/adapters-http";
import type { TestDatabase } from "@posts/adapters-postgres/testing";
import { claimsFor } from "@posts/domain";
import type { SignedUpUser } from "./api-client.js";
import { RELIABILITY_JWT_SECRET } from "./in-process-service.js";

/** The slice of `pg_stat_activity` these tests read. */
type StatActivity = {
  pg_stat_activity: {
    pid: number;
    datname: string | null;
    client_port: number | null;
    wait_event_type: string | null;
  };
};

/** The test's own connection to the suite database, outside the service under test. */
type Admin = Pick<TestDatabase, "db">;

/**
 * Terminates the server processes of the connections coming from `clientPorts` (the proxy's
 * outgoing ports), as a DBA's `pg_terminate_backend` or a failover would; answers how many.
 */
export async function terminateBackends(admin: Admin, clientPorts: readonly number[]): Promise<number> {
  if (clientPorts.length === 0) return 0;
  const rows = await admin.db
    .withTables<StatActivity>()
    .selectFrom("pg_stat_activity")
    .select((eb) => eb.fn<boolean>("pg_terminate_backend", ["pid"]).as("terminated"))
    .where("client_port", "in", [...clientPorts])
    .execute();
  return rows.filter((row) => row.terminated).length;
}

/** How many backends of `database` are waiting for a lock right now. */
export async function backendsWaitingForLocks(admin: Admin, database: string): Promise<number> {
  const rows = await admin.db
    .withTables<StatActivity>()
    .selectFrom("pg_stat_activity")
    .select("pid")
    .where("datname", "=", database)
    .where("wait_event_type", "=", "Lock")
    .execute();
  return rows.length;
}

/**
 * Locks the row of post `id` (`SELECT … FOR UPDATE` in an open transaction of the test's own
 * connection), so that any write of it waits; the answer releases the lock (rolls back).
 */
export async function lockPost(admin: Admin, id: number): Promise<() => Promise<void>> {
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked = () => {};
  const isLocked = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const transaction = admin.db.transaction().execute(async (trx) => {
    await trx.selectFrom("posts").select("id").where("id", "=", id).forUpdate().execute();
    locked();
    await released;
  });
  await Promise.race([isLocked, transaction]);
  return async () => {
    release();
    await transaction;
  };
}

/** How many posts the database holds. */
export async function countPosts(admin: Admin): Promise<number> {
  const row = await admin.db
    .selectFrom("posts")
    .select((eb) => eb.fn.countAll<string>().as("count"))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** The stored title and content of post `id`. */
export async function storedPost(
  admin: Admin,
  id: number,
): Promise<{ title: string; content: string } | undefined> {
  return admin.db.selectFrom("posts").select(["title", "content"]).where("id", "=", id).executeTakeFirst();
}

/** The name of the database a `postgres://` URL points at. */
export function databaseNameOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

/**
 * Inserts a user straight into the database and signs a token for them with the tests' key,
 * for suites that must not spend a service start on registering one.
 */
export async function insertUserWithToken(admin: Pick<TestDatabase, "users">): Promise<SignedUpUser> {
  const email = `reliability-${randomBytes(6).toString("hex")}@example.com`;
  const created = await admin.users.create({ email, passwordHash: "not-a-real-hash", createdAt: new Date() });
  if (!created.ok) throw new Error(`could not insert ${email}: ${created.error}`);
  const issuer = new JwtTokenIssuer({ secret: RELIABILITY_JWT_SECRET, issuer: "posts-service" });
  const { token } = await issuer.issue(claimsFor(created.value));
  return { id: created.value.id, email, token };
}
