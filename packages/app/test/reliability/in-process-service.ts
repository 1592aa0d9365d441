import type { AddressInfo } from "node:net";
import type { HttpAppOptions, HttpTimeouts } from "@posts/adapters-http";
import type { DatabaseHandle } from "@posts/adapters-postgres";
import { type AppConfig, type Environment, loadConfig } from "../../src/config.js";
import { createContainer, type HttpApp, type ServiceResource, TOKENS } from "../../src/container.js";
import { createLogger } from "../../src/create-logger.js";
import { openResources } from "../../src/open-resources.js";

/** A 32-byte key; the service refuses shorter ones. */
export const RELIABILITY_JWT_SECRET = "reliability-secret-reliability-secret";

export type { HttpApp } from "../../src/container.js";

/** Options of the HTTP app a test replaces; `timeouts` replace only the bounds they name. */
export type HttpOverrides = Partial<Omit<HttpAppOptions, "timeouts">> & {
  readonly timeouts?: Partial<HttpTimeouts>;
};
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
  http: HttpOverrides = {},
): Promise<InProcessService> {
  const loaded = loadConfig({ JWT_SECRET: RELIABILITY_JWT_SECRET, LOG_LEVEL: "silent", ...env });
  if (!loaded.ok) throw new Error(`invalid test configuration: ${loaded.error.join(" ")}`);
  const config = loaded.value;
  const root = createContainer(config, createLogger(config.LOG_LEVEL));
  const opened: ServiceResource[] = [];
  const closeOpened = async () => {
    for (const resource of opened.reverse()) await resource.close();
  };
  try {
    await openResources(root, { opened: (resource) => opened.push(resource) });
    // The composition root's graph, with only the HTTP app's options replaced.
    const container = root.createChildContainer();
    const options = root.resolve(TOKENS.httpAppOptions);
    container.register(TOKENS.httpAppOptions, {
      useValue: { ...options, ...http, timeouts: { ...options.timeouts, ...http.timeouts } },
    });
    const app = await container.resolve(TOKENS.httpApp);
    await app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = app.server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}`,
      app,
      config,
      database: root.resolve(TOKENS.database),
      close: async () => {
        await app.close();
        await closeOpened();
      },
    };
  } catch (error) {
    await closeOpened();
    throw error;
  }
}
