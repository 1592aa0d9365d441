/** Turns an instant into the contract's wire timestamp, `yyyy-MM-ddTHH:mm:ss.SSS`, without zone. */
export type TimestampFormatter = (instant: Date) => string;

// UTC needs no time zone data: the ISO string already is the wire format plus a "Z".
const utc: TimestampFormatter = (instant) => instant.toISOString().slice(0, 23);

const formatters = new Map<string, TimestampFormatter>([["UTC", utc]]);

/**
 * The formatter for an IANA time zone (`UTC`, `Asia/Seoul`, …): the local date and time of the
 * instant in that zone, always with milliseconds. Built once per zone and shared, because
 * building an `Intl.DateTimeFormat` costs far more than using one. Throws a `RangeError` for a
 * zone name the runtime does not know, so a typo fails at start rather than on a request.
 */
export function timestampFormatter(timeZone: string): TimestampFormatter {
  const canonical = new Intl.DateTimeFormat("en-US", { timeZone }).resolvedOptions().timeZone;
  let formatter = formatters.get(canonical);
  if (formatter === undefined) {
    formatter = zonedFormatter(canonical);
    formatters.set(canonical, formatter);
  }
  return formatter;
}

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
  return (instant) => {
    const time = instant.getTime();
    const fields: Record<string, number> = {};
    for (const part of parts.formatToParts(instant)) fields[part.type] = Number(part.value);
    // The zone's wall clock, read as if it were UTC, is an instant whose ISO string is the
    // wanted text: toISOString does the padding.
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
}
