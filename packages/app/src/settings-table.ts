import { type TSchema, Type } from "typebox";
import { integerRange } from "./read-settings.js";
import { SETTINGS } from "./settings.js";

/** The comment that opens the generated table in a README. */
export const TABLE_START =
  "<!-- settings-table:start: generated from src/settings.ts by `pnpm --filter @posts/app settings:table`; edit the schema, not this table -->";
/** The comment that closes it. */
export const TABLE_END = "<!-- settings-table:end -->";

type Described = TSchema & {
  readonly description?: string;
  readonly default?: unknown;
  readonly unset?: string;
  readonly must?: string;
  readonly minBytes?: number;
  readonly multipleOf?: number;
};

/**
 * The settings of `SETTINGS` as a Markdown table, one row per variable in the schema's order:
 * its name, its type and bounds, its default (or what unset means), and its meaning.
 */
export function settingsTable(): string {
  const rows = Object.entries(SETTINGS.properties).map(([name, schema]) => {
    const setting = schema as Described;
    return [`\`${name}\``, typeOf(setting, setting.must), defaultOf(setting), setting.description ?? ""];
  });
  return [["Variable", "Type", "Default", "Meaning"], ["---", "---", "---", "---"], ...rows]
    .map((cells) => `| ${cells.map((cell) => cell.replaceAll("|", "\\|")).join(" | ")} |`)
    .join("\n");
}

/**
 * `readme` with the text between {@link TABLE_START} and {@link TABLE_END} replaced by
 * {@link settingsTable}. Throws when the markers are missing, so a README that lost them fails
 * loudly rather than going stale.
 */
export function withSettingsTable(readme: string): string {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start === -1 || end < start) {
    throw new Error(`the README has no "${TABLE_START}" … "${TABLE_END}" markers`);
  }
  return `${readme.slice(0, start + TABLE_START.length)}\n${settingsTable()}\n${readme.slice(end)}`;
}

function typeOf(schema: Described, must: string | undefined): string {
  // Read before the guards below narrow the schema to TypeBox's own types.
  const { minBytes, multipleOf } = schema;
  if (Type.IsUnion(schema) || (must !== undefined && !Type.IsInteger(schema))) {
    return minBytes !== undefined ? `text of ${must}` : (must ?? "");
  }
  if (Type.IsInteger(schema)) {
    const multiple = multipleOf === undefined ? "" : `, a multiple of ${multipleOf}`;
    return `whole number ${integerRange(schema)}${multiple}`;
  }
  if (Type.IsBoolean(schema)) return "`true` or `false`";
  if (Type.IsEnum(schema)) return `one of ${schema.enum.map((choice) => `\`${choice}\``).join(", ")}`;
  if (Type.IsArray(schema)) {
    const item = schema.items as Described;
    return `comma-separated list, each ${typeOf(item, item.must)}`;
  }
  return "text";
}

/**
 * The Default cell of `name`'s row in {@link settingsTable}: its default in backticks, `none` for
 * an empty list, or what unset means. Other pages that list a setting restate this cell (a test
 * holds them to it).
 */
export function defaultCell(name: keyof typeof SETTINGS.properties): string {
  return defaultOf(SETTINGS.properties[name] as Described);
}

function defaultOf(schema: Described): string {
  if (!("default" in schema)) return schema.unset ?? "unset";
  const value = schema.default;
  if (Array.isArray(value) && value.length === 0) return "none";
  return `\`${String(value)}\``;
}
