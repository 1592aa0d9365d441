/**
 * `pnpm bench`: seeds PostgreSQL, starts the built service, the baseline (the limit of the
 * stack) and the Express server (common practice) as child processes, drives the same load at
 * each in interleaved rounds from this process, and prints the medians, the ratios and the
 * targets (bench/README.md#targets). `--embedded` measures the service on its embedded database
 * instead (embedded-run.ts); `--curve`, the service on two sizes of the table against each other
 * (curve-run.ts).
 */
import { existsSync } from "node:fs";
import os from "node:os";
import type pg from "pg";
import { runCurve } from "./load/curve-run.js";
import { runEmbedded } from "./load/embedded-run.js";
import {
  BASELINE_MAIN,
  EXPRESS_MAIN,
  keep,
  log,
  logFile,
  makeFixture,
  newTokenSettings,
  printTimeTo20,
  publish,
  runScenarios,
  SERVICE_MAIN,
  serverDatabaseUrl,
  serverEnv,
  serviceArgs,
  since,
  stopAllOnExit,
} from "./load/harness.js";
import { measureSearchPages, measureTimeTo20, searchPopulation } from "./load/search-population.js";
import { seededDatabase, warmDatabase } from "./load/seeded-database.js";
import { renderSearchPages, type TimeTo20 } from "./measure/report.js";
import { type Options, parseOptions } from "./options.js";
import { freePorts, type ServerProcess, startServer } from "./servers/server-process.js";

async function runPostgres(options: Options) {
  if (!options.selfCheck && !existsSync(SERVICE_MAIN)) {
    throw new Error(
      `${SERVICE_MAIN} is missing: build the service first (pnpm run build), or use --self-check`,
    );
  }
  const tokens = newTokenSettings();
  const [servicePort, baselinePort, expressPort] = await freePorts(3);
  const serviceName = options.selfCheck ? "baseline-2" : "service";
  const withExpress = !options.selfCheck && !options.skipExpress;
  const servers: ServerProcess[] = [];
  const stopAll = stopAllOnExit(servers);
  const database = await seededDatabase(options, options.database, options.posts, tokens);
  const { client } = database;
  const env = serverEnv(tokens, database.url);
  /** What server `name` is started with: its port, and its own application_name on the bench database. */
  const envOf = (name: string, port: number | undefined) => ({
    ...env,
    PORT: String(port),
    DATABASE_URL: serverDatabaseUrl(database.url, name),
  });
  try {
    await warmDatabase(database);

    if (options.searchOnly) {
      await runSearchPages(options, envOf(serviceName, servicePort), client);
      return;
    }

    // Every server starts on the seeded database, so none has seen it any other way.
    const service = await startServer(
      serviceName,
      options.selfCheck ? [BASELINE_MAIN] : serviceArgs(options.serviceNodeArgs),
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

    // What a search box waits for, on the same service and seed: the terms of `--search-only`
    // followed to their first twenty matches, one at a time, the other servers idle, before the
    // scenarios write posts at the newest end, where every search starts (once unmeasured, so
    // that the service's code is compiled and the pages read from PostgreSQL's buffers). Not for
    // the self-check (no service), the closed loop (GET one alone) or a run of some scenarios.
    const followTerms = !options.selfCheck && !options.closedLoop && options.only.length === 0;
    let timeTo20: TimeTo20[] | undefined;
    if (followTerms) {
      const terms = await searchPopulation(client, options.posts);
      await measureTimeTo20(service.url, terms);
      timeTo20 = await measureTimeTo20(service.url, terms);
    }

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
      timeTo20,
    );
  } finally {
    await stopAll();
    await client.end();
  }
}

/**
 * `--search-only`: the service alone on the seeded database, asked for the search pages of the
 * population of terms `searchPopulation` draws, 4 requests at a time (a page's own cost, not a
 * queue's); prints the latency distribution per class of term and the targets
 * (bench/README.md#targets); then follows each planted and clustered term, and some drawn ones,
 * to its first twenty matches or the end, one term at a time (what a user waits for), and prints
 * the pages and time per class. Keeps both and the pages' chart in bench/results/.
 */
async function runSearchPages(options: Options, env: NodeJS.ProcessEnv, client: pg.Client): Promise<void> {
  const service = await startServer(
    "service",
    serviceArgs(options.serviceNodeArgs),
    env,
    logFile("service-search"),
  );
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
    const following = performance.now();
    const timeTo20 = await measureTimeTo20(service.url, terms);
    printTimeTo20(
      timeTo20,
      `one term at a time · measured in ${since(following)}, load average ${(os.loadavg()[0] ?? 0).toFixed(2)}`,
    );
    await keep({ heading, date, options, node: process.version, searchPages: timings, timeTo20 });
  } finally {
    await service.stop();
  }
}

const options = parseOptions(process.argv.slice(2));
(options.embedded ? runEmbedded(options) : options.curve ? runCurve(options) : runPostgres(options)).catch(
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
