import { canonicalTimeZone } from "@posts/domain";

/** Turns an instant into the contract's wire timestamp, `yyyy-MM-ddTHH:mm:ss.SSS`, without zone. */
export type TimestampFormatter = (instant: Date) => string;

const DAY = 86_400_000;

// 0000-01-01T00:00:00.000 and 9999-12-31T23:59:59.999: the wall clocks the arithmetic formats.
// Outside them the text is the ISO string's, with a sign and six year digits.
const FIRST_WALL = -62_167_219_200_000;
const LAST_WALL = 253_402_300_799_999;

// Looked up rather than padded per value: a list page formats 40 timestamps. Each piece carries
// the separator before it, which saves a concatenation per field.
const padded = (digits: number, before: string): readonly string[] =>
  Array.from({ length: 10 ** digits }, (_, n) => before + String(n).padStart(digits, "0"));
const YEAR_HALF = padded(2, "");
const AFTER_DASH = padded(2, "-");
const AFTER_T = padded(2, "T");
const AFTER_COLON = padded(2, ":");
const AFTER_DOT = padded(3, ".");

/**
 * The wire text of a wall clock given as milliseconds since 1970-01-01T00:00 on that clock, for
 * years 0000–9999. Arithmetic instead of `toISOString`, which allocates a Date and a string to
 * slice and cost the most of any function of ours in a profile.
 */
function formatWall(wall: number): string {
  const days = Math.floor(wall / DAY);
  let rest = wall - days * DAY;
  // Howard Hinnant's civil_from_days: exact for the proleptic Gregorian calendar, as Date is.
  // Days count from 0000-03-01 so that the leap day ends a year; an era is 400 years.
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra =
    ((dayOfEra - ((dayOfEra / 1460) | 0) + ((dayOfEra / 36_524) | 0) - ((dayOfEra / 146_096) | 0)) / 365) | 0;
  const dayOfYear = dayOfEra - (365 * yearOfEra + ((yearOfEra / 4) | 0) - ((yearOfEra / 100) | 0));
  const shiftedMonth = ((5 * dayOfYear + 2) / 153) | 0;
  const day = dayOfYear - (((153 * shiftedMonth + 2) / 5) | 0) + 1;
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hour = (rest / 3_600_000) | 0;
  rest -= hour * 3_600_000;
  const minute = (rest / 60_000) | 0;
  rest -= minute * 60_000;
  const second = (rest / 1000) | 0;
  const millisecond = rest - second * 1000;
  const date = `${YEAR_HALF[(year / 100) | 0]}${YEAR_HALF[year % 100]}${AFTER_DASH[month]}${AFTER_DASH[day]}`;
  return `${date}${AFTER_T[hour]}${AFTER_COLON[minute]}${AFTER_COLON[second]}${AFTER_DOT[millisecond]}`;
}

// UTC needs no time zone data: the instant is its own wall clock.
const utc: TimestampFormatter = (instant) => {
  const time = instant.getTime();
  // NaN fails both tests, so an invalid Date still throws toISOString's RangeError.
  return time >= FIRST_WALL && time <= LAST_WALL ? formatWall(time) : instant.toISOString().slice(0, 23);
};

const formatters = new Map<string, TimestampFormatter>([["UTC", utc]]);

/**
 * The formatter for an IANA time zone (`UTC`, `Asia/Seoul`, …): the local date and time of the
 * instant in that zone as `yyyy-MM-ddTHH:mm:ss.SSS`, in the proleptic Gregorian calendar as Date
 * has it, always with milliseconds. Built once per zone and shared, because building an
 * `Intl.DateTimeFormat` costs far more than using one, and the zone's offsets it has looked up
 * serve later requests. Throws a `RangeError` for a zone name the runtime does not know, so a typo
 * fails at start rather than on a request, and for an invalid Date. Local years outside 0000–9999
 * do not occur; they keep the text they always had, cut from the ISO string (`+010000-01-01T05:00:00.`).
 */
export function timestampFormatter(timeZone: string): TimestampFormatter {
  const canonical = canonicalTimeZone(timeZone);
  let formatter = formatters.get(canonical);
  if (formatter === undefined) {
    formatter = zonedFormatter(canonical);
    formatters.set(canonical, formatter);
  }
  return formatter;
}

// A zone's offset changes only at transitions, and tzdb's closest pair is days apart: a block of
// 15 minutes holds at most one, so equal offsets at its two ends hold for all of it.
const BLOCK = 15 * 60_000;
// 4096 blocks are 6 weeks of dense timestamps; clearing bounds a scan over many years.
const CACHED_BLOCKS = 4096;

function zonedFormatter(timeZone: string): TimestampFormatter {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone,
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
    hourCycle: "h23",
  });
  const fieldsAt = (time: number | Date): Record<string, number> => {
    const fields: Record<string, number> = {};
    for (const part of parts.formatToParts(time)) fields[part.type] = Number(part.value);
    return fields;
  };

  // The wall clock read as UTC minus the instant, both in whole seconds: Intl has no milliseconds,
  // and offsets can have seconds (LMT, Dublin's -00:25:21). Intl's year is the era's (1 BC is
  // "1"), so only the time of day is read: an offset is under a day, and the date tells whether
  // the wall clock is on the day before or after.
  const offsetAt = (time: number): number => {
    const second = Math.floor(time / 1000) * 1000;
    const fields = fieldsAt(second);
    const wallTime = (((fields.hour ?? 0) * 60 + (fields.minute ?? 0)) * 60 + (fields.second ?? 0)) * 1000;
    const difference = wallTime - (second - Math.floor(second / DAY) * DAY);
    if (fields.day === new Date(second).getUTCDate()) return difference;
    return difference < 0 ? difference + DAY : difference - DAY;
  };

  // For what the arithmetic does not format (local years outside 0000–9999, invalid Dates): the
  // zone's wall clock, read as if it were UTC, is an instant whose ISO string is the wanted text.
  const slowly = (instant: Date): string => {
    const time = instant.getTime();
    const fields = fieldsAt(instant);
    const wall = Date.UTC(
      fields.year ?? 0,
      (fields.month ?? 1) - 1,
      fields.day ?? 1,
      fields.hour ?? 0,
      fields.minute ?? 0,
      fields.second ?? 0,
      ((time % 1000) + 1000) % 1000,
    );
    return new Date(wall).toISOString().slice(0, 23);
  };

  const offsets = new Map<number, number>();
  return (instant) => {
    const time = instant.getTime();
    // A day of margin covers any offset; it also keeps the block's ends inside Date's range,
    // and sends an invalid Date to Intl's RangeError.
    if (!(time >= FIRST_WALL - DAY && time <= LAST_WALL + DAY)) return slowly(instant);
    const block = Math.floor(time / BLOCK);
    let offset = offsets.get(block);
    if (offset === undefined) {
      const start = block * BLOCK;
      offset = offsetAt(start);
      if (offsetAt(start + BLOCK - 1) === offset) {
        if (offsets.size >= CACHED_BLOCKS) offsets.clear();
        offsets.set(block, offset);
      } else {
        // A transition inside the block: neither end's offset holds for all of it.
        offset = offsetAt(time);
      }
    }
    const wall = time + offset;
    return wall >= FIRST_WALL && wall <= LAST_WALL ? formatWall(wall) : slowly(instant);
  };
}
