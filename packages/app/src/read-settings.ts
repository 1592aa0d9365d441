import { isIP } from "node:net";
import { canonicalTimeZone } from "@posts/domain";
import { type TSchema, Type } from "typebox";
import { Value } from "typebox/value";
import { type SETTING_FORMATS, SETTINGS, type Settings } from "./settings.js";

/** The process environment, or any stand-in for it in tests. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** The name of a setting of {@link SETTINGS}. */
export type SettingName = keyof Settings & string;

/** A value a setting cannot have, in a sentence naming the variable. */
export interface SettingProblem {
  readonly name: SettingName;
  readonly message: string;
}

/** What {@link readSettings} found: every value it could read, and what it could not. */
export interface SettingsRead {
  /** Each setting read, or its default (absent if it has none) when unset, blank or refused. */
  readonly settings: Settings;
  /** In the order of {@link SETTINGS}. */
  readonly problems: SettingProblem[];
}

/** The keywords of ours a setting's schema may carry besides JSON Schema's (see `settings.ts`). */
interface SettingKeywords {
  readonly must?: string;
  readonly format?: (typeof SETTING_FORMATS)[number];
  readonly minBytes?: number;
  readonly verbatim?: boolean;
  readonly secret?: boolean;
}

type Schema = TSchema & SettingKeywords & { readonly default?: unknown };
type Reading =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly problems: string[] };

const PROXY_KEYWORDS = new Set(["loopback", "linklocal", "uniquelocal"]);

const FORMAT_CHECKS: Readonly<Record<(typeof SETTING_FORMATS)[number], (text: string) => boolean>> = {
  "postgres-url": isPostgresUrl,
  "time-zone": isTimeZone,
  "proxy-address": isProxyAddress,
  origin: isOrigin,
  "nats-urls": isNatsUrlList,
};

/**
 * Reads every setting of {@link SETTINGS} from `env` as its schema says. Pure: no file, no clock.
 * Unset and blank variables (unless `verbatim`, only the empty string) take their defaults; a
 * value that does not fit is reported, never echoed if `secret`, and its default taken instead,
 * so that every problem is found in one pass.
 */
export function readSettings(env: Environment): SettingsRead {
  const settings: Record<string, unknown> = {};
  const problems: SettingProblem[] = [];
  for (const [name, schema] of Object.entries(SETTINGS.properties) as [SettingName, Schema][]) {
    const raw = textOf(env, name);
    const reading = raw === undefined ? undefined : read(name, schema, raw, schema.must);
    if (reading?.ok === true) {
      settings[name] = reading.value;
    } else {
      for (const message of reading?.problems ?? []) problems.push({ name, message });
      if ("default" in schema) settings[name] = schema.default;
    }
  }
  return { settings: settings as Settings, problems };
}

/** Whether `env` gives `name` a value (not unset, not blank), whether or not a usable one. */
export function isSet(env: Environment, name: SettingName): boolean {
  return textOf(env, name) !== undefined;
}

/** Sorts `problems` into the order of {@link SETTINGS}, keeping the order of one setting's. */
export function inSettingsOrder(problems: readonly SettingProblem[]): SettingProblem[] {
  const names = Object.keys(SETTINGS.properties);
  return [...problems].sort((a, b) => names.indexOf(a.name) - names.indexOf(b.name));
}

function textOf(env: Environment, name: SettingName): string | undefined {
  const raw = env[name];
  // A key is whatever bytes the operator put there, spaces included.
  const text = (SETTINGS.properties[name] as Schema).verbatim === true ? raw : raw?.trim();
  return text === undefined || text === "" ? undefined : text;
}

function read(name: string, schema: Schema, raw: string, must: string | undefined): Reading {
  if (Type.IsUnion(schema)) {
    // The members in order; the first that reads the text wins, the last one's problem is told.
    let reading: Reading = { ok: false, problems: [] };
    for (const member of schema.anyOf as Schema[]) {
      reading = read(name, member, raw, must);
      if (reading.ok) return reading;
    }
    return reading;
  }
  if (Type.IsInteger(schema)) return readInteger(name, schema, raw, must);
  if (Type.IsBoolean(schema)) {
    const value = raw.toLowerCase();
    if (value === "true" || value === "1") return { ok: true, value: true };
    if (value === "false" || value === "0") return { ok: true, value: false };
    return refused(`${name} must be true or false, got "${raw}".`);
  }
  if (Type.IsEnum(schema)) {
    const value = schema.enum.find((choice) => String(choice).toLowerCase() === raw.toLowerCase());
    if (value !== undefined) return { ok: true, value };
    return refused(`${name} must be one of ${schema.enum.join(", ")}, got "${raw}".`);
  }
  if (Type.IsArray(schema)) return readList(name, schema.items as Schema, raw, must);
  if (Type.IsString(schema)) {
    const problem = stringProblem(name, schema, raw, must);
    return problem === undefined ? { ok: true, value: raw } : refused(problem);
  }
  throw new TypeError(`setting ${name}: no reader for its schema`);
}

function readInteger(name: string, schema: Schema, raw: string, must: string | undefined): Reading {
  // Digits only: Number() would also take "1e9", "0x10" and " 8".
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  const failed = Number.isSafeInteger(value) ? Value.Errors(schema, value).map((e) => e.keyword) : ["type"];
  if (failed.length === 0) return { ok: true, value };
  if (must !== undefined && failed.every((keyword) => keyword === "multipleOf")) {
    return refused(`${name} must be ${must}, got "${raw}".`);
  }
  return refused(`${name} must be a whole number ${integerRange(schema)}, got "${raw}".`);
}

/** The bounds of an integer setting in words: `from 0 to 65535`, or `at least 1` when unbounded above. */
export function integerRange(schema: TSchema): string {
  const { minimum = 0, maximum } = schema as { minimum?: number; maximum?: number };
  return maximum === undefined ? `at least ${minimum}` : `from ${minimum} to ${maximum}`;
}

function readList(name: string, item: Schema, raw: string, must: string | undefined): Reading {
  const entries = raw
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  if (item.format !== undefined) {
    const check = FORMAT_CHECKS[item.format];
    const invalid = entries.filter((entry) => !check(entry));
    if (invalid.length > 0) {
      // Entries that may hold a password (standby URLs) are never echoed.
      if (item.secret === true) return refused(`${name} must be ${must}.`);
      return refused(`${name} must be ${must}; these are not: ${invalid.join(", ")}.`);
    }
  }
  const problems = entries.flatMap((entry, index) => {
    const problem = stringProblem(`${name} entry ${index + 1} of ${entries.length}`, item, entry, item.must);
    return problem === undefined ? [] : [problem];
  });
  return problems.length === 0 ? { ok: true, value: entries } : { ok: false, problems };
}

function stringProblem(
  label: string,
  schema: Schema,
  text: string,
  must: string | undefined,
): string | undefined {
  if (schema.minBytes !== undefined) {
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes < schema.minBytes) return `${label} is ${bytes} bytes long; it must be ${must}.`;
  }
  if (schema.format !== undefined && !FORMAT_CHECKS[schema.format](text)) {
    return schema.secret === true ? `${label} must be ${must}.` : `${label} must be ${must}, got "${text}".`;
  }
  return undefined;
}

function refused(problem: string): Reading {
  return { ok: false, problems: [problem] };
}

function isPostgresUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "postgres:" || url.protocol === "postgresql:") && url.hostname !== "";
  } catch {
    return false;
  }
}

function isTimeZone(name: string): boolean {
  try {
    canonicalTimeZone(name);
    return true;
  } catch {
    return false;
  }
}

function isProxyAddress(entry: string): boolean {
  if (PROXY_KEYWORDS.has(entry)) return true;
  const [address = "", prefix, ...rest] = entry.split("/");
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.origin === value;
  } catch {
    return false;
  }
}

function isNatsUrlList(value: string): boolean {
  const entries = value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  return entries.every((entry) => {
    try {
      const url = new URL(entry);
      return (url.protocol === "nats:" || url.protocol === "tls:") && url.hostname !== "";
    } catch {
      return false;
    }
  });
}
