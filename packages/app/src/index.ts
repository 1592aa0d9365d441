export type { AppConfig, Environment, JwtSecretSource, LogLevel } from "./config.js";
export {
  EMBEDDED_DATABASE_DIRECTORY,
  JWT_SECRET_FILE_NAME,
  jwtSecretSource,
  loadConfig,
  MIN_JWT_SECRET_BYTES,
} from "./config.js";
export type { HttpApp, ServicePart, ServiceResource } from "./container.js";
export { createContainer, TOKENS } from "./container.js";
export { createLogger, REDACTED_PATHS } from "./create-logger.js";
export type { StoredJwtSecret } from "./load-or-create-jwt-secret.js";
export { loadOrCreateJwtSecret } from "./load-or-create-jwt-secret.js";
export { migrate } from "./migrate.js";
export type { OpenResourcesOptions } from "./open-resources.js";
export { openResources } from "./open-resources.js";
export type { ServeExtras } from "./serve.js";
export { serve } from "./serve.js";
export { TRACE_EXPORTERS, tracingWanted } from "./tracing/tracing-wanted.js";
