export { type Argon2Options, Argon2PasswordHasher } from "./auth/argon2-password-hasher.js";
export type { ThrottleSettings } from "./auth/failure-throttle.js";
export { MIN_SECRET_BYTES } from "./auth/jwt-secret.js";
export { JwtTokenIssuer, type JwtTokenIssuerOptions } from "./auth/jwt-token-issuer.js";
export { buildHttpApp } from "./build-http-app.js";
export type { ErrorEnvelope } from "./errors/error-envelope.js";
export { HTTP_MESSAGES } from "./errors/http-messages.js";
export {
  CLOUD_EVENT_SOURCE,
  type CloudEventRenderer,
  cloudEventReference,
  cloudEventRenderer,
} from "./events/cloud-event.js";
export type { StreamCapSettings } from "./events/stream-caps.js";
export { type TimestampFormatter, timestampFormatter } from "./http/timestamp-formatter.js";
export type {
  DatabasePoolStats,
  HttpAppOptions,
  HttpTimeouts,
  PostCacheAccess,
  PostCacheStats,
  StandbyReadStats,
  StandbyStats,
} from "./http-app-options.js";
export { buildMetricsApp } from "./operations/metrics-app.js";
