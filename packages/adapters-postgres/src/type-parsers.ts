/**
 * How values of the column types this adapter reads leave the database, for every driver.
 * `pg` hands int8 over as text and PGlite as a number or a bigint, and their timestamptz
 * parsing differs (PGlite's `new Date(text)` fails on offsets with seconds); both drivers are
 * given these parsers so that the rest of the adapter sees one representation.
 */

/**
 * Reads a PostgreSQL `int8` as a JavaScript number. Throws a `RangeError` when the value is not
 * a safe integer (beyond ±(2^53 − 1)), because a rounded id would silently name another row.
 */
export function parseInt8(value: string | number | bigint): number {
  const number = typeof value === "number" ? value : Number(value);
  if (Number.isSafeInteger(number)) return number;
  throw new RangeError(
    `int8 value ${String(value)} is beyond JavaScript's safe integer range (±${Number.MAX_SAFE_INTEGER}) ` +
      "and cannot be represented exactly",
  );
}

// PostgreSQL's output for timestamptz under the default DateStyle (ISO): the session's local
// time with its UTC offset, which has seconds for historical zones (e.g. "-04:56:02").
const TIMESTAMPTZ =
  /^(\d{4,})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?([+-])(\d{2})(?::(\d{2}))?(?::(\d{2}))?$/;

/**
 * Reads a PostgreSQL `timestamptz` in its text form as the instant it names, whatever the
 * session's or the process's time zone. Sub-millisecond digits are dropped (a `Date` holds
 * milliseconds; this adapter only ever stores milliseconds). Throws for `infinity`, BC dates
 * and any DateStyle other than ISO, none of which this adapter writes.
 */
export function parseTimestamptz(text: string): Date {
  const match = TIMESTAMPTZ.exec(text);
  if (match === null) throw new RangeError(`cannot read timestamptz ${JSON.stringify(text)} as an instant`);
  const [
    ,
    year,
    month,
    day,
    hour,
    minute,
    second,
    fraction = "",
    sign,
    offsetH,
    offsetM = "0",
    offsetS = "0",
  ] = match;
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not move years 0–99 into the 1900s.
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  date.setUTCHours(Number(hour), Number(minute), Number(second), Number(fraction.padEnd(3, "0").slice(0, 3)));
  const offsetMs = (Number(offsetH) * 3600 + Number(offsetM) * 60 + Number(offsetS)) * 1000;
  // The text is local time, that is UTC plus the offset.
  return new Date(date.getTime() - (sign === "-" ? -offsetMs : offsetMs));
}

/** PostgreSQL type OIDs. */
const INT8 = 20;
const TIMESTAMPTZ_OID = 1184;

/** The text-format parsers every driver of this adapter is configured with, by type OID. */
export const TYPE_PARSERS: Readonly<Record<number, (text: string) => unknown>> = {
  [INT8]: parseInt8,
  [TIMESTAMPTZ_OID]: parseTimestamptz,
};
