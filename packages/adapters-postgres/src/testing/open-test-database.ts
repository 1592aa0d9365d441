import { createHash, randomBytes } from "node:crypto";
import { readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import pg from "pg";
import { createPgliteDatabase } from "../connection/create-pglite-database.js";
import { createPostgresDatabase } from "../connection/create-postgres-database.js";
import type { DatabaseEngine, DatabaseHandle } from "../connection/database-handle.js";
import { PostgresAttemptCounter } from "../repositories/postgres-attempt-counter.js";
import { PostgresPostRepository } from "../repositories/postgres-post-repository.js";
import { PostgresUserRepository } from "../repositories/postgres-user-repository.js";
import { migrateToLatest } from "../schema/migrate-to-latest.js";
import { acquirePostgresContainer } from "./postgres-container.js";
import { containerRuntimeAnswers } from "./postgres-for-tests.js";
import { truncateTables } from "./truncate-tables.js";

/** A fresh database for one test file, with the repositories on it. */
export interface TestDatabase extends DatabaseHandle {
  /** For a PostgreSQL server: the URL of this test's own database, to open more pools on it. */
  readonly connectionString: string | undefined;
  readonly posts: PostgresPostRepository;
  readonly users: PostgresUserRepository;
  readonly attempts: PostgresAttemptCounter;
  /** Empties the tables and restarts the ids (see `truncateTables`). */
  truncate(): Promise<void>;
  /** Closes the database and, on a server, drops it. */
  close(): Promise<void>;
}

export interface OpenTestDatabaseOptions {
  /** Run the migrations before answering. Default true; false gives an empty database. */
  readonly migrate?: boolean;
}

const LOG_PREFIX = "[@posts/adapters-postgres/testing]";

/**
 * Opens a new, empty, migrated database that nobody else uses. Open one per test file, in
 * `beforeAll`, and `truncate()` between tests if they need an empty one: opening costs a few
 * tenths of a second on a server and about a second with PGlite (after one initdb of several
 * seconds, the first time a PGlite build runs on the machine).
 *
 * `"pglite"`: PGlite in memory, copied from an initdb made once per PGlite build and kept in the
 * system's temporary directory.
 *
 * `"postgres"`, in this order:
 * 1. `DATABASE_URL` set: a database `posts_test_<time>_<random>` created on that server and
 *    dropped (WITH (FORCE)) by `close()`; ones older than a day, left by runs that died, are
 *    dropped too. The URL's user needs CREATEDB. If the server does not answer, this fails: a
 *    configured server is never silently replaced (CI relies on that).
 * 2. Else a PostgreSQL container when a container runtime answers (`acquirePostgresContainer`:
 *    the image of `POSTS_TEST_POSTGRES_IMAGE`; one per process, stopped when its last database
 *    closes).
 * 3. Else it fails. It never answers PGlite instead: a suite that passed on PGlite would say it
 *    had run on PostgreSQL. A suite on PostgreSQL declares what it needs when it is collected,
 *    `describeNeeding(await postgresForTests(), …)`, and is skipped or failed there.
 */
export async function openTestDatabase(
  requested: DatabaseEngine,
  options: OpenTestDatabaseOptions = {},
): Promise<TestDatabase> {
  const opened = requested === "pglite" ? await openPglite() : await openPostgres();
  try {
    if (options.migrate ?? true) await migrateToLatest(opened.handle.db);
  } catch (error) {
    await opened.close();
    throw error;
  }
  const { db, engine, notifications } = opened.handle;
  return {
    db,
    engine,
    ...(notifications === undefined ? {} : { notifications }),
    connectionString: opened.connectionString,
    posts: new PostgresPostRepository(db),
    users: new PostgresUserRepository(db),
    attempts: new PostgresAttemptCounter(db),
    truncate: () => truncateTables(db),
    close: opened.close,
  };
}

interface Opened {
  readonly handle: DatabaseHandle;
  readonly connectionString: string | undefined;
  readonly close: () => Promise<void>;
}

// ---- PGlite ----------------------------------------------------------------------------------

let pristine: Promise<Blob> | undefined;

/**
 * The data directory right after initdb, which every PGlite test database starts from. initdb
 * takes seconds, and vitest runs each test file in a fresh process, so the result is kept in the
 * system's temporary directory too, keyed by the PGlite build; a process that finds it there
 * needs no initdb at all.
 */
function pristineDataDir(): Promise<Blob> {
  pristine ??= (async () => {
    const cached = await cacheFile();
    if (cached !== undefined) {
      try {
        return new Blob([await readFile(cached)]);
      } catch {
        // Not made yet, or unreadable: make it.
      }
    }
    // With the extensions createPgliteDatabase loads, so that the copy starts as that would.
    const pglite = await PGlite.create({ extensions: { pg_trgm } });
    let dump: Blob;
    try {
      dump = await pglite.dumpDataDir("none");
    } finally {
      await pglite.close();
    }
    if (cached !== undefined) {
      // Written aside and renamed, so a concurrent reader sees the whole file or none.
      const partial = `${cached}.${process.pid}.${randomBytes(4).toString("hex")}`;
      try {
        await writeFile(partial, new Uint8Array(await dump.arrayBuffer()));
        await rename(partial, cached);
      } catch {
        await rm(partial, { force: true });
      }
    }
    return dump;
  })();
  return pristine;
}

/** Where the initdb result of this PGlite build is cached, or `undefined` when that is unknown. */
async function cacheFile(): Promise<string | undefined> {
  try {
    const entry = createRequire(import.meta.url).resolve("@electric-sql/pglite");
    const build = createHash("sha256").update(entry);
    for (const file of ["pglite.wasm", "pglite.data", "initdb.wasm"]) {
      const { size, mtimeMs } = await stat(join(dirname(entry), file));
      build.update(`${file}:${size}:${mtimeMs}`);
    }
    return join(tmpdir(), `posts-pglite-initdb-${build.digest("hex").slice(0, 16)}.tar`);
  } catch {
    return undefined;
  }
}

async function openPglite(): Promise<Opened> {
  let handle: DatabaseHandle;
  try {
    handle = await createPgliteDatabase({ loadDataDir: await pristineDataDir() });
  } catch (error) {
    // A damaged cache file must not fail every later run: drop it and start over once.
    const cached = await cacheFile();
    if (cached === undefined) throw error;
    await rm(cached, { force: true });
    pristine = undefined;
    handle = await createPgliteDatabase({ loadDataDir: await pristineDataDir() });
  }
  return { handle, connectionString: undefined, close: handle.close };
}

// ---- PostgreSQL ------------------------------------------------------------------------------

async function openPostgres(): Promise<Opened> {
  const url = process.env.DATABASE_URL;
  if (url !== undefined && url !== "") return openOnServer(url, async () => {});

  if (await containerRuntimeAnswers()) {
    const container = await acquirePostgresContainer();
    try {
      return await openOnServer(container.url, container.release);
    } catch (error) {
      await container.release();
      throw error;
    }
  }

  throw new Error(
    `${LOG_PREFIX} no DATABASE_URL and no container runtime, so no PostgreSQL to open: declare the ` +
      "suite with describeNeeding(await postgresForTests(), …), which skips it or fails it when collected",
  );
}

const TEST_DATABASE = /^posts_test_([0-9a-z]+)_[0-9a-f]+$/;
// A test database this old was left by a run that died before dropping it.
const LEFTOVER_AFTER_MS = 24 * 60 * 60 * 1000;
const sweptServers = new Set<string>();

/** Creates a uniquely named database on the server `adminUrl` points at, and opens it. */
async function openOnServer(adminUrl: string, release: () => Promise<void>): Promise<Opened> {
  // The creation time in the name lets a later run tell leftovers from databases in use.
  const name = `posts_test_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  await onServer(adminUrl, async (client) => {
    if (!sweptServers.has(adminUrl)) {
      sweptServers.add(adminUrl);
      await dropLeftovers(client);
    }
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const connectionString = url.toString();
  const handle = createPostgresDatabase({ connectionString });
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      try {
        await handle.close();
        await onServer(adminUrl, (client) =>
          client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`),
        );
      } finally {
        await release();
      }
    })();
    return closing;
  };
  return { handle, connectionString, close };
}

/** Drops the test databases of runs that ended without dropping theirs; best effort. */
async function dropLeftovers(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ datname: string }>(
    "SELECT datname FROM pg_database WHERE datname LIKE 'posts\\_test\\_%'",
  );
  for (const { datname } of rows) {
    const created = TEST_DATABASE.exec(datname)?.[1];
    if (created === undefined || Date.now() - Number.parseInt(created, 36) < LEFTOVER_AFTER_MS) continue;
    await client
      .query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`)
      .catch(() => {});
  }
}

/** Runs `work` on a connection of its own; fails loudly, naming the server, when it cannot connect. */
async function onServer<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  client.on("error", () => {});
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `${LOG_PREFIX} the PostgreSQL server at ${redacted(adminUrl)} does not answer: ` +
        `${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(an unparsable DATABASE_URL)";
  }
}
