// @ts-check
/**
 * How values of the column types this adapter reads leave the database, for every driver.
 * `pg` hands int8 over as text and PGlite as a number or a bigint, and their timestamptz
 * parsing differs (PGlite's `new Date(text)` fails on offsets with seconds); both drivers are
 * given these parsers so that the rest of the adapter sees one representation.
 *
 * JavaScript rather than TypeScript: the worker thread that runs PGlite (`pglite-worker.js`)
 * imports it, and Node runs a worker's files as they are, without a build step in the tests.
 * `checkJs` type-checks it from these JSDoc types.
 */

/**
 * Reads a PostgreSQL `int8` as a JavaScript number. Throws a `RangeError` when the value is not
 * a safe integer (beyond ±(2^53 − 1)), because a rounded id would silently name another row.
 * @param {string | number | bigint} value
 * @returns {number}
 */
export function parseInt8(value) {
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
 * @param {string} text
 * @returns {Date}
 */
export function parseTimestamptz(text) {
  return readCommonShape(text) ?? readAnyShape(text);
}

const ZERO = 48;
const NINE = 57;
const DASH = 45;
const PLUS = 43;
const COLON = 58;
const SPACE = 32;
const DOT = 46;

/**
 * The decimal number in `text[start, end)`, or -1 when a character there is not an ASCII digit.
 * @param {string} text
 * @param {number} start
 * @param {number} end
 * @returns {number}
 */
function digitsAt(text, start, end) {
  let value = 0;
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code < ZERO || code > NINE) return -1;
    value = value * 10 + code - ZERO;
  }
  return value;
}

/**
 * The hot path: every timestamp of every row read goes through here, and a regular expression
 * with `Date` arithmetic was a visible share of a list request's CPU. Reads the shape PostgreSQL
 * prints for years 100–9999 by character position; answers undefined for anything else, which
 * {@link readAnyShape} decides.
 * @param {string} text
 * @returns {Date | undefined}
 */
function readCommonShape(text) {
  const length = text.length;
  if (
    length < 22 ||
    text.charCodeAt(4) !== DASH ||
    text.charCodeAt(7) !== DASH ||
    text.charCodeAt(10) !== SPACE ||
    text.charCodeAt(13) !== COLON ||
    text.charCodeAt(16) !== COLON
  ) {
    return undefined;
  }
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 7);
  const day = digitsAt(text, 8, 10);
  const hour = digitsAt(text, 11, 13);
  const minute = digitsAt(text, 14, 16);
  const second = digitsAt(text, 17, 19);
  // Date.UTC moves years 0–99 into the 1900s.
  if (year < 100 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return undefined;

  let at = 19;
  let millisecond = 0;
  if (text.charCodeAt(at) === DOT) {
    const start = at + 1;
    at = start;
    while (at < length && text.charCodeAt(at) >= ZERO && text.charCodeAt(at) <= NINE) at++;
    const count = at - start;
    if (count === 0 || count > 6) return undefined;
    millisecond = digitsAt(text, start, start + Math.min(count, 3)) * 10 ** Math.max(0, 3 - count);
  }

  const sign = text.charCodeAt(at);
  const offsetLength = length - at - 1;
  if ((sign !== PLUS && sign !== DASH) || (offsetLength !== 2 && offsetLength !== 5 && offsetLength !== 8)) {
    return undefined;
  }
  const hasMinutes = offsetLength >= 5;
  const hasSeconds = offsetLength === 8;
  if (
    (hasMinutes && text.charCodeAt(at + 3) !== COLON) ||
    (hasSeconds && text.charCodeAt(at + 6) !== COLON)
  ) {
    return undefined;
  }
  const offsetHours = digitsAt(text, at + 1, at + 3);
  const offsetMinutes = hasMinutes ? digitsAt(text, at + 4, at + 6) : 0;
  const offsetSeconds = hasSeconds ? digitsAt(text, at + 7, at + 9) : 0;
  if (offsetHours < 0 || offsetMinutes < 0 || offsetSeconds < 0) return undefined;
  const offsetMs = ((offsetHours * 60 + offsetMinutes) * 60 + offsetSeconds) * 1000;
  const local = Date.UTC(year, month - 1, day, hour, minute, second, millisecond);
  // The text is local time, that is UTC plus the offset.
  return new Date(sign === DASH ? local + offsetMs : local - offsetMs);
}

/**
 * Any ISO DateStyle output, years before 100 and beyond 9999 included; throws for the rest.
 * @param {string} text
 * @returns {Date}
 */
function readAnyShape(text) {
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

/**
 * The text-format parsers every driver of this adapter is configured with, by type OID.
 * @type {Readonly<Record<number, (text: string) => unknown>>}
 */
export const TYPE_PARSERS = {
  [INT8]: parseInt8,
  [TIMESTAMPTZ_OID]: parseTimestamptz,
};
