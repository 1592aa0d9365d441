import { join } from "node:path";
import type { Result } from "@posts/domain";
import { canonicalTimeZone, err, ok } from "@posts/domain";
import { type Environment, inSettingsOrder, isSet, readSettings } from "./read-settings.js";
import { MIN_JWT_SECRET_BYTES, type Settings } from "./settings.js";

export type { Environment } from "./read-settings.js";
export { MIN_JWT_SECRET_BYTES } from "./settings.js";

/** A pino level name, `silent` included. */
export type LogLevel = Settings["LOG_LEVEL"];

/**
 * Everything the service reads from its environment, validated: each setting of the schema
 * (`settings.ts`) under its own name, with the type the schema gives it (TypeBox `Static`), so
 * a setting is declared in one place only. `APP_TIME_ZONE` is in its canonical spelling
 * (`Asia/Seoul` for `asia/seoul`). URLs and keys may hold credentials: never log them.
 */
export type AppConfig = Readonly<Settings>;

/** Name of the generated key's file inside `DATA_DIR`. */
export const JWT_SECRET_FILE_NAME = "jwt-secret";

/** The embedded database's directory inside `DATA_DIR`. */
export const EMBEDDED_DATABASE_DIRECTORY = "pglite";

/**
 * Reads the configuration from `env`, as the settings schema (`settings.ts`) declares each
 * variable. Pure: it touches no file and no clock, so the JWT key file is only named here, not
 * read. Unset and blank variables take their defaults. On failure, every problem is listed in the
 * order of the schema (the README's), each a sentence naming the variable, so one restart fixes
 * them all.
 */
export function loadConfig(env: Environment): Result<AppConfig, readonly string[]> {
  const { settings, problems } = readSettings(env);
  if (isSet(env, "DATABASE_URL") && !isSet(env, "JWT_SECRET")) {
    // Every instance behind a shared database must sign with the same key, so none may invent one.
    problems.push({
      name: "JWT_SECRET",
      message:
        `JWT_SECRET is required when DATABASE_URL is set (at least ${MIN_JWT_SECRET_BYTES} bytes; ` +
        "generate one with: openssl rand -base64 48).",
    });
  }
  if (isSet(env, "DATABASE_LISTEN_URL") && !isSet(env, "DATABASE_URL")) {
    problems.push({
      name: "DATABASE_LISTEN_URL",
      message: "DATABASE_LISTEN_URL names the database of DATABASE_URL: set DATABASE_URL too.",
    });
  }
  if (settings.DATABASE_READ_URLS.length > 0 && !isSet(env, "DATABASE_URL")) {
    problems.push({
      name: "DATABASE_READ_URLS",
      message: "DATABASE_READ_URLS names standbys of the DATABASE_URL server: set DATABASE_URL too.",
    });
  }
  if (
    settings.METRICS_PORT !== undefined &&
    settings.METRICS_PORT !== 0 &&
    settings.METRICS_PORT === settings.PORT
  ) {
    problems.push({
      name: "METRICS_PORT",
      message:
        "METRICS_PORT must differ from PORT: it is a listener of its own (unset it to serve /metrics on PORT).",
    });
  }
  if (problems.length > 0) return err(inSettingsOrder(problems).map((problem) => problem.message));
  return ok({ ...settings, APP_TIME_ZONE: canonicalTimeZone(settings.APP_TIME_ZONE) });
}

/**
 * Where the token-signing key comes from: `JWT_SECRET`, or (embedded mode only, `loadConfig`
 * refuses a `DATABASE_URL` without it) a file under `DATA_DIR` that the service fills with a
 * random key on its first start.
 */
export type JwtSecretSource =
  | { readonly from: "environment"; readonly secret: string }
  | { readonly from: "file"; readonly path: string };

/** The source of the signing key that `config` names. */
export function jwtSecretSource(config: AppConfig): JwtSecretSource {
  return config.JWT_SECRET === undefined
    ? { from: "file", path: join(config.DATA_DIR, JWT_SECRET_FILE_NAME) }
    : { from: "environment", secret: config.JWT_SECRET };
}
