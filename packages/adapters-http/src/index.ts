export { type Argon2Options, Argon2PasswordHasher } from "./argon2-password-hasher.js";
export { buildHttpApp } from "./build-http-app.js";
export type { ErrorEnvelope } from "./error-envelope.js";
export { DEFAULT_LOGIN_THROTTLE, type ThrottleSettings } from "./failure-throttle.js";
export type { DatabasePoolStats, HttpAppOptions, HttpTimeouts } from "./http-app-options.js";
export { HTTP_MESSAGES } from "./http-messages.js";
export { MIN_SECRET_BYTES } from "./jwt-secret.js";
export { JwtTokenIssuer, type JwtTokenIssuerOptions } from "./jwt-token-issuer.js";
export { type TimestampFormatter, timestampFormatter } from "./timestamp-formatter.js";
