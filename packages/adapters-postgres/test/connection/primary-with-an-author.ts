import {
  createPostgresDatabase,
  type DatabaseHandle,
  migrateToLatest,
  PostgresUserRepository,
} from "@posts/adapters-postgres";
import type { LocalCluster, LocalServer } from "@posts/adapters-postgres/testing";

/** A primary of a test's own, migrated, with one user to write posts as. */
export interface PrimaryWithAnAuthor {
  readonly server: LocalServer;
  /** Connected as application `admin`: what the test reads and sets up the server through. */
  readonly admin: DatabaseHandle;
  readonly authorId: number;
}

/**
 * Starts `cluster`'s primary on `port`, migrates it through an `admin` handle and registers an
 * author: the start of every suite that writes posts on a server it then disturbs (cancelled or
 * terminated commits, a standby that never confirms). The caller closes `admin` and stops the
 * cluster.
 */
export async function primaryWithAnAuthor(cluster: LocalCluster, port: number): Promise<PrimaryWithAnAuthor> {
  const server = await cluster.startPrimary("primary", port);
  const admin = createPostgresDatabase({ connectionString: server.url(), applicationName: "admin" });
  await migrateToLatest(admin.db);
  const author = await new PostgresUserRepository(admin.db).create({
    email: "author@example.com",
    passwordHash: "hash",
    createdAt: new Date(),
  });
  if (!author.ok) throw new Error(author.error);
  return { server, admin, authorId: author.value.id };
}
