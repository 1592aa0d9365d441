/**
 * `pnpm bench`: seeds PostgreSQL, starts the built service, the baseline (the limit of the
 * stack) and the Express server (common practice) as child processes, drives the same load at
 * each in interleaved rounds from this process, and prints the medians, the ratios and the
 * targets of issue 13. `--embedded` measures the service on its embedded database instead
 * (embedded-run.ts).
 */
import { existsSync } from "node:fs";
import os from "node:os";
import { hash } from "@node-rs/argon2";
import pg from "pg";
import {
  createFallbackSchema,
  recreateDatabase,
  SEED_PASSWORD,
  seed,
  warmPageCache,
  withDatabase,
} from "./load/database.js";
import { runEmbedded } from "./load/embedded-run.js";
import {
  BASELINE_MAIN,
  EXPRESS_MAIN,
  HASH_SOURCE_EMAIL,
  keep,
  log,
  logFile,
  makeFixture,
  newTokenSettings,
  publish,
  registerHashSource,
  runScenarios,
  SERVICE_MAIN,
  serverDatabaseUrl,
  serverEnv,
  since,
} from "./load/harness.js";
import { measureSearchPages, searchPopulation } from "./load/search-population.js";
import { renderSearchPages } from "./measure/report.js";
import { type Options, parseOptions } from "./options.js";
import { freePorts, runNode, type ServerProcess, startServer } from "./servers/server-process.js";

async function runPostgres(options: Options) {
  const serviceBuilt = existsSync(SERVICE_MAIN);
  if (!options.selfCheck && !serviceBuilt) {
    throw new Error(
      `${SERVICE_MAIN} is missing: build the service first (pnpm run build), or use --self-check`,
    );
  }
  const tokens = newTokenSettings();
  const benchUrl = withDatabase(options.databaseUrl, options.database);
  const env = serverEnv(tokens, benchUrl);
  const [servicePort, baselinePort, expressPort] = await freePorts(3);
  const serviceName = options.selfCheck ? "baseline-2" : "service";
  const withExpress = !options.selfCheck && !options.skipExpress;
  /** What server `name` is started with: its port, and its own application_name on the bench database. */
  const envOf = (name: string, port: number | undefined) => ({
    ...env,
    PORT: String(port),
    DATABASE_URL: serverDatabaseUrl(benchUrl, name),
  });

  const servers: ServerProcess[] = [];
  const stopAll = () => Promise.all(servers.map((s) => s.stop()));
  // Stopped by Ctrl-C or by `kill`, the servers go too: they are children that outlive the bench.
  process.once("SIGINT", () => void stopAll().then(() => process.exit(130)));
  process.once("SIGTERM", () => void stopAll().then(() => process.exit(143)));
  const started = performance.now();
  // Names what the seed plants, so that --reuse-database never measures an older seed.
  const seedMark = `bench seed (old-end terms): ${options.posts} posts / ${options.users} users`;
  const reused = options.reuseDatabase && (await seededAs(benchUrl, seedMark));
  if (!reused) await recreateDatabase(options.databaseUrl, options.database);
  const client = new pg.Client({ connectionString: benchUrl });
  await client.connect();
  try {
    if (reused) {
      // A newer service may have migrations the database has not seen yet.
      if (serviceBuilt) await runNode([SERVICE_MAIN, "migrate"], env);
      log(`reusing ${options.database}, seeded earlier with ${options.posts} posts (--reuse-database)`);
    } else {
      // The service's own migrations through its documented command; a self-check before the
      // service is built falls back to a copy of its schema.
      if (serviceBuilt) await runNode([SERVICE_MAIN, "migrate"], env);
      else await createFallbackSchema(client);

      const passwordHash = options.selfCheck
        ? await hash(SEED_PASSWORD)
        : await hashFromService(envOf("service", servicePort), client);
      await seed(client, options, passwordHash);
      await client.query(`comment on table posts is '${seedMark}'`);
      log(`migrated and seeded ${options.posts} posts over ${options.users} users in ${since(started)}`);
    }

    const warmed = await warmPageCache(client);
    log(
      warmed === undefined
        ? "the server has no pg_prewarm: the tables are measured as cached as they happen to be"
        : `read ${(warmed / 2 ** 30).toFixed(1)} GiB of tables and indexes into the page cache`,
    );

    if (options.searchOnly) {
      await runSearchPages(options, envOf(serviceName, servicePort), client);
      return;
    }

    // Every server starts on the seeded database, so none has seen it any other way.
    const service = await startServer(
      serviceName,
      options.selfCheck ? [BASELINE_MAIN] : [...options.serviceNodeArgs, SERVICE_MAIN],
      envOf(serviceName, servicePort),
      logFile(serviceName),
    );
    servers.push(service);
    const baseline = await startServer(
      "baseline",
      [BASELINE_MAIN],
      envOf("baseline", baselinePort),
      logFile("baseline"),
    );
    servers.push(baseline);
    const express = withExpress
      ? await startServer("express", [EXPRESS_MAIN], envOf("express", expressPort), logFile("express"))
      : undefined;
    if (express !== undefined) servers.push(express);
    log(servers.map((s) => `${s.name} pid ${s.pid} at ${s.url}`).join(", "));

    const measuring = performance.now();
    const loadBefore = os.loadavg()[0] ?? 0;
    const runs = await runScenarios(
      options,
      makeFixture(options, tokens),
      { service, baseline, express },
      client,
    );
    const load = `load average ${loadBefore.toFixed(2)} → ${(os.loadavg()[0] ?? 0).toFixed(2)}`;
    await publish(
      runs,
      options,
      options.selfCheck
        ? "Self-check: baseline vs baseline on PostgreSQL"
        : `Service vs baseline${withExpress ? " and Express" : ""} on PostgreSQL`,
      serviceName,
      `measured in ${since(measuring)}, ${load}`,
    );
  } finally {
    await stopAll();
    await client.end();
  }
}

/**
 * `--search-only`: the service alone on the seeded database, asked for the search pages of the
 * population of terms `searchPopulation` draws, 4 requests at a time (a page's own cost, not a
 * queue's); prints the latency distribution per class of term and the targets of issue 20, and
 * keeps the timings and their chart in bench/results/.
 */
async function runSearchPages(options: Options, env: NodeJS.ProcessEnv, client: pg.Client): Promise<void> {
  const service = await startServer("service", [SERVICE_MAIN], env, logFile("service-search"));
  try {
    const terms = await searchPopulation(client, options.posts);
    log(`${terms.length} search terms; warming up`);
    // One unmeasured pass, so that the measured one reads from PostgreSQL's buffers as it would
    // in steady use rather than measuring the first reads from disk after seeding.
    await measureSearchPages(service.url, terms, options.posts, 4);
    const started = performance.now();
    const timings = await measureSearchPages(service.url, terms, options.posts, 4);
    const load = `load average ${(os.loadavg()[0] ?? 0).toFixed(2)}`;
    const heading = "Search pages on PostgreSQL";
    const date = new Date().toISOString();
    console.log(
      `\n## ${heading}\n\n${date} · node ${process.version} · ` +
        `${os.cpus().length} CPUs · ${options.posts} posts · ${terms.length} terms, 4 at a time · ` +
        `measured in ${since(started)}, ${load}\n`,
    );
    console.log(renderSearchPages(timings));
    await keep({ heading, date, options, node: process.version, searchPages: timings });
  } finally {
    await service.stop();
  }
}

/** Whether the database at `url` exists and was seeded as `mark` says. */
async function seededAs(url: string, mark: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const { rows } = await client.query<{ mark: string | null }>(
      "select obj_description('posts'::regclass, 'pg_class') as mark",
    );
    return rows[0]?.mark === mark;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The hash the service's own hasher makes of {@link SEED_PASSWORD}: registers one user through
 * a short-lived service process, takes the hash and deletes the user, which makes way for the
 * seeded ids.
 */
async function hashFromService(env: NodeJS.ProcessEnv, client: pg.Client): Promise<string> {
  const service = await startServer("service", [SERVICE_MAIN], env, logFile("service-register"));
  try {
    await registerHashSource(service.url);
  } finally {
    await service.stop();
  }
  const { rows } = await client.query<{ password_hash: string }>(
    "delete from users where email = $1 returning password_hash",
    [HASH_SOURCE_EMAIL],
  );
  const passwordHash = rows[0]?.password_hash;
  if (passwordHash === undefined)
    throw new Error("the user registered through the service is not in the database");
  return passwordHash;
}

const options = parseOptions(process.argv.slice(2));
(options.embedded ? runEmbedded(options) : runPostgres(options)).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
