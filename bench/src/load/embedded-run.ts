import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import type { Options } from "../options.js";
import { freePorts, startServer } from "../servers/server-process.js";
import { seed } from "./database.js";
import {
  HASH_SOURCE_EMAIL,
  log,
  logFile,
  makeFixture,
  newTokenSettings,
  publish,
  registerHashSource,
  runScenarios,
  serverEnv,
  serviceArgs,
  since,
} from "./harness.js";

/**
 * The service on its embedded database (PGlite, PostgreSQL in WASM, in the service's own
 * process), for information: no baseline, a smaller seed. The service creates and migrates
 * its database in a fresh DATA_DIR on a first start; the harness then seeds it while the
 * service is stopped (PGlite admits one process at a time) and starts it again to measure.
 */
export async function runEmbedded(options: Options): Promise<void> {
  const tokens = newTokenSettings();
  const dataDir = await mkdtemp(join(os.tmpdir(), "posts-bench-"));
  const env = serverEnv(tokens, undefined, dataDir);
  const [port] = await freePorts(1);
  const started = performance.now();
  try {
    const first = await startServer(
      "service",
      serviceArgs(),
      { ...env, PORT: String(port), MIGRATE_ON_START: "true" },
      logFile("service-embedded-register"),
    );
    try {
      await registerHashSource(first.url);
    } finally {
      await first.stop();
    }

    // With the extension the service's search indexes use, as the service opens it.
    const db = await PGlite.create({ dataDir: join(dataDir, "pglite"), extensions: { pg_trgm } });
    try {
      const { rows } = await db.query<{ password_hash: string }>(
        "delete from users where email = $1 returning password_hash",
        [HASH_SOURCE_EMAIL],
      );
      await seed(db, options, rows[0]?.password_hash ?? "");
    } finally {
      await db.close();
    }
    log(`embedded database migrated and seeded with ${options.posts} posts in ${since(started)}`);

    const service = await startServer(
      "service",
      serviceArgs(options.serviceNodeArgs),
      { ...env, PORT: String(port) },
      logFile("service-embedded"),
    );
    try {
      log(`service pid ${service.pid} at ${service.url} on PGlite in ${dataDir}`);
      const measuring = performance.now();
      const runs = await runScenarios(options, makeFixture(options, tokens), { service });
      await publish(
        runs,
        options,
        "Service on its embedded database (PGlite), for information",
        "service (PGlite)",
        `measured in ${since(measuring)}`,
      );
    } finally {
      await service.stop();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
