import { readdir, readFile } from "node:fs/promises";
import { DEFAULT_IDEMPOTENCY_TTL_MS } from "@posts/domain";
import { type TSchema, Type } from "typebox";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";
import { SETTING_FORMATS, SETTINGS } from "../src/settings.js";
import {
  defaultCell,
  settingsTable,
  TABLE_END,
  TABLE_START,
  withSettingsTable,
} from "../src/settings-table.js";

const README = new URL("../README.md", import.meta.url);
const ROOT = new URL("../../../", import.meta.url);
// Each entry as JSON Schema with the keywords these tests read; TypeBox's types name fewer.
const entries = Object.entries(SETTINGS.properties) as [string, TSchema & Setting][];

interface Setting {
  readonly description?: string;
  readonly default?: unknown;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly multipleOf?: number;
}

/** The ways prose may say `value`, the default of `name`: bare, a duration in words, MiB. */
function spoken(name: string, value: string): string[] {
  const number = Number(value);
  const ways = [value];
  const units = name.endsWith("_MS")
    ? ([
        ["day", 86_400_000],
        ["hour", 3_600_000],
        ["minute", 60_000],
        ["s", 1000],
      ] as const)
    : ([["MiB", 1_048_576]] as const);
  const [unit, size] = units.find(([, size]) => number >= size && number % size === 0) ?? [];
  if (unit === undefined || size === undefined) return ways;
  const count = number / size;
  if (unit === "s" || unit === "MiB") return [...ways, `${count} ${unit}`];
  return [...ways, count === 1 ? `a ${unit}` : `${count} ${unit}s`, ...(count === 1 ? [`one ${unit}`] : [])];
}

function problems(env: Record<string, string>): readonly string[] {
  const result = loadConfig(env);
  return result.ok ? [] : result.error;
}

describe("the settings schema", () => {
  it("is what the README's settings table says, row for row (pnpm --filter @posts/app settings:table)", async () => {
    const readme = await readFile(README, "utf8");
    const table = readme.slice(readme.indexOf(TABLE_START) + TABLE_START.length, readme.indexOf(TABLE_END));
    expect(table.trim()).toBe(settingsTable());
    expect(withSettingsTable(readme)).toBe(readme);
  });

  it("lists every setting in the table, once", () => {
    const names = [...settingsTable().matchAll(/^\| `([A-Z_]+)` \|/gm)].map((match) => match[1]);
    expect(names).toEqual(entries.map(([name]) => name));
  });

  it("refuses a README that lost its markers rather than leaving it stale", () => {
    expect(() => withSettingsTable("# no table here")).toThrow(/markers/);
  });

  it("says what every setting means", () => {
    for (const [name, schema] of entries) {
      expect({ name, description: typeof schema.description }).toEqual({ name, description: "string" });
    }
  });

  it("names in `format` only the checks readSettings has", () => {
    const formats = [...JSON.stringify(SETTINGS).matchAll(/"format":"([^"]+)"/g)].map((match) => match[1]);
    expect(formats.length).toBeGreaterThan(0);
    for (const format of formats) expect(SETTING_FORMATS).toContain(format);
  });

  it("is what every other page that states a setting's default says: tables of docs/ and READMEs, and `NAME` (default …) or (… by default) in prose", async () => {
    const names = new Set(entries.map(([name]) => name));
    const pages = [
      "README.md",
      ...(await readdir(new URL("docs/", ROOT)))
        .filter((file) => file.endsWith(".md"))
        .map((file) => `docs/${file}`),
      ...(await readdir(new URL("packages/", ROOT))).map((dir) => `packages/${dir}/README.md`),
    ];
    const stated: { page: string; name: string; said: string }[] = [];
    for (const page of pages) {
      const text = await readFile(new URL(page, ROOT), "utf8").catch(() => "");
      // The generated table is held by the test above.
      const start = text.indexOf(TABLE_START);
      const own = start === -1 ? text : text.slice(0, start) + text.slice(text.indexOf(TABLE_END));
      for (const [, name = "", said = ""] of own.matchAll(/^\| `([A-Z][A-Z_]+)` \| ([^|]*?) \|/gm)) {
        stated.push({ page, name, said });
      }
      const prose = /`([A-Z][A-Z_]+)` \((?:default ([^)]*)|([^)]*) by default|(\d[^)]*))\)/g;
      for (const [, name = "", ...said] of own.matchAll(prose)) {
        stated.push({ page, name, said: said.find((each) => each !== undefined) ?? "" });
      }
    }
    // A setting without a default may be given one by a script of its own (the bench's DATABASE_URL).
    const withDefault = new Set(entries.filter(([, schema]) => "default" in schema).map(([name]) => name));
    const restated = stated.filter(({ name }) => names.has(name) && withDefault.has(name));
    expect(restated.map(({ name }) => name)).toEqual(
      expect.arrayContaining(["READ_REPLICA_MAX_WAIT_MS", "BODY_LIMIT"]),
    );
    const wrong = restated.filter(({ name, said }) => {
      const cell = defaultCell(name as keyof typeof SETTINGS.properties);
      const value = cell.replaceAll("`", "");
      return ![cell, ...spoken(name, value)].includes(said);
    });
    expect(wrong).toEqual([]);
  });

  it("keeps the domain's idempotency key lifetime as its default", () => {
    const [, idempotencyTtl] = entries.find(([name]) => name === "IDEMPOTENCY_TTL_MS") ?? [];
    expect(idempotencyTtl?.default).toBe(DEFAULT_IDEMPOTENCY_TTL_MS);
  });
});

describe("loadConfig, held to the schema's bounds", () => {
  const integers = entries.filter(([, schema]) => Type.IsInteger(schema));

  it.each(integers)(
    "%s: accepts its bounds and refuses one past them, in the schema's words",
    (name, schema) => {
      const { minimum = 0, maximum, multipleOf = 1 } = schema;
      const range = maximum === undefined ? `at least ${minimum}` : `from ${minimum} to ${maximum}`;
      const refusal = (value: number) => `${name} must be a whole number ${range}, got "${value}".`;
      expect(problems({ [name]: String(Math.ceil(minimum / multipleOf) * multipleOf) })).toEqual([]);
      if (minimum > 0) expect(problems({ [name]: String(minimum - 1) })).toEqual([refusal(minimum - 1)]);
      if (maximum !== undefined) {
        expect(problems({ [name]: String(maximum) })).toEqual([]);
        expect(problems({ [name]: String(maximum + 1) })).toEqual([refusal(maximum + 1)]);
      }
      expect(problems({ [name]: "12abc" })).toEqual([expect.stringMatching(new RegExp(`^${name} must be`))]);
    },
  );

  const booleans = entries.filter(([, schema]) => Type.IsBoolean(schema)).map(([name]) => name);

  it.each(booleans)("%s: reads true, false, 1 and 0, and refuses anything else", (name) => {
    for (const value of ["true", "FALSE", "1", "0"]) expect(problems({ [name]: value })).toEqual([]);
    expect(problems({ [name]: "maybe" })).toEqual([`${name} must be true or false, got "maybe".`]);
  });

  it("reports the problems of several settings in the schema's order, whatever the environment's", () => {
    const names = ["METRICS", "PORT", "LOG_LEVEL", "JWT_TTL_MS"];
    const found = problems(Object.fromEntries(names.map((name) => [name, "nonsense"])));
    const order = entries.map(([name]) => name).filter((name) => names.includes(name));
    expect(found.map((problem) => problem.split(" ")[0])).toEqual(order);
  });
});
