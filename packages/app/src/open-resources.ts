import { Argon2PasswordHasher } from "@posts/adapters-http";
import type { Logger } from "pino";
import type { DependencyContainer } from "tsyringe";
import { type AppConfig, jwtSecretSource } from "./config.js";
import { type ServiceResource, TOKENS } from "./container.js";
import { loadOrCreateJwtSecret } from "./load-or-create-jwt-secret.js";
import { openDatabase, openMigrationDatabase } from "./open-database.js";
import { prepareDatabase } from "./prepare-database.js";

/** Options of {@link openResources}. */
export interface OpenResourcesOptions {
  /** Told each resource that must be closed as soon as it is open, so a later failure closes it. */
  readonly opened: (resource: ServiceResource) => void;
  /** Aborts the wait for the database, e.g. on SIGTERM during start-up. */
  readonly signal?: AbortSignal;
}

/**
 * Opens what the graph of `container` stands on and registers each as an instance: the JWT key
 * (`TOKENS.jwtSecret`, from JWT_SECRET or the key file, generated on first start), the database
 * (`TOKENS.database`, waited for up to DB_STARTUP_TIMEOUT_MS and migrated unless
 * MIGRATE_ON_START=false) and argon2 (`TOKENS.passwordHasher`), in that order. These are
 * asynchronous, which tsyringe's synchronous factories cannot express, so they are opened here
 * before anything is resolved. Rejects with an error a person can act on.
 */
export async function openResources(
  container: DependencyContainer,
  options: OpenResourcesOptions,
): Promise<void> {
  const config = container.resolve(TOKENS.config);
  const logger = container.resolve(TOKENS.logger);
  container.register(TOKENS.jwtSecret, { useValue: await loadJwtSecret(config, logger) });

  const database = await openDatabase(config, logger);
  options.opened({ name: "database", close: () => database.close() });
  const migrations = config.MIGRATE_ON_START ? openMigrationDatabase(config) : undefined;
  let migrated: Awaited<ReturnType<typeof prepareDatabase>>;
  try {
    migrated = await prepareDatabase(database, {
      migrate: config.MIGRATE_ON_START,
      timeoutMs: config.DB_STARTUP_TIMEOUT_MS,
      logger,
      ...(migrations === undefined ? {} : { migrateOn: migrations }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  } finally {
    await migrations?.close();
  }
  if (migrated !== undefined) logMigrations(logger, migrated.applied);
  container.register(TOKENS.database, { useValue: database });

  container.register(TOKENS.passwordHasher, { useValue: await Argon2PasswordHasher.create() });
}

async function loadJwtSecret(config: AppConfig, logger: Logger): Promise<string> {
  const source = jwtSecretSource(config);
  if (source.from === "environment") return source.secret;
  const stored = await loadOrCreateJwtSecret(source.path);
  // The path, never the key.
  if (stored.created) {
    logger.warn(
      { file: source.path },
      `JWT_SECRET is not set: generated a signing key and stored it in ${source.path} (mode 0600); ` +
        "later starts reuse it. Set JWT_SECRET to choose the key yourself.",
    );
  } else {
    logger.info(
      { file: source.path },
      `JWT_SECRET is not set: using the signing key stored in ${source.path}`,
    );
  }
  return stored.secret;
}

function logMigrations(logger: Logger, applied: readonly string[]) {
  if (applied.length === 0) logger.info("database schema is up to date");
  else logger.info({ applied }, `applied ${applied.length} database migration(s)`);
}
