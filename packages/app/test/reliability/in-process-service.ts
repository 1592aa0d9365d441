import type { AddressInfo } from "node:net";
import { Argon2PasswordHasher, buildHttpApp, type HttpAppOptions } from "@posts/adapters-http";
import type { DatabaseHandle } from "@posts/adapters-postgres";
import { type AppConfig, type Environment, loadConfig } from "../../src/config.js";
import { createContainer, TOKENS } from "../../src/container.js";
import { createLogger } from "../../src/create-logger.js";
import { openDatabase } from "../../src/open-database.js";
import { prepareDatabase } from "../../src/prepare-database.js";

/** A 32-byte key; the service refuses shorter ones. */
export const RELIABILITY_JWT_SECRET = "reliability-secret-reliability-secret";

/** The HTTP app `buildHttpApp` answers. */
export type HttpApp = Awaited<ReturnType<typeof buildHttpApp>>;

/** The service running in this process, listening on 127.0.0.1. */
export interface InProcessService {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly app: HttpApp;
  readonly config: AppConfig;
  /** The service's own pool, for tests that must occupy its connections. */
  readonly database: DatabaseHandle;
  /** Closes the server, then the pool, as the service's shutdown does. */
  close(): Promise<void>;
}

/**
 * Starts the service the way `serve` does (configuration from an environment, the database
 * opened and waited for, the composition root's graph, `buildHttpApp`), but in this process and
 * without signal handling, so a test can reach its pool and a fault in it fails the test run
 * instead of a child process nobody watches. `http` overrides options the environment cannot
 * set, such as socket timeouts. Needs DATABASE_URL in `env`; JWT_SECRET defaults to a test key.
 */
export async function startInProcessService(
  env: Environment,
  http: Partial<HttpAppOptions> = {},
): Promise<InProcessService> {
  const loaded = loadConfig({ JWT_SECRET: RELIABILITY_JWT_SECRET, LOG_LEVEL: "silent", ...env });
  if (!loaded.ok) throw new Error(`invalid test configuration: ${loaded.error.join(" ")}`);
  const config = loaded.value;
  if (config.jwt.secret.from !== "environment") throw new Error("the in-process service needs JWT_SECRET");
  const logger = createLogger(config.logLevel);

  const database = await openDatabase(config.database, logger);
  try {
    await prepareDatabase(database, {
      migrate: config.migrateOnStart,
      timeoutMs: config.startupTimeoutMs,
      logger,
    });
    const container = createContainer({
      config,
      logger,
      database,
      jwtSecret: config.jwt.secret.secret,
      passwordHasher: await Argon2PasswordHasher.create(),
    });
    const app = await buildHttpApp({ ...container.resolve(TOKENS.httpAppOptions), ...http });
    await app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = app.server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}`,
      app,
      config,
      database,
      close: async () => {
        await app.close();
        await database.close();
      },
    };
  } catch (error) {
    await database.close();
    throw error;
  }
}
