const formats = new Map<string, Intl.DateTimeFormat>();

/**
 * Now, as the wall clock of `timeZone` shows it, read as if it were UTC: comparable with
 * `Date.parse(timestamp + "Z")` of a zone-less timestamp written in that zone
 * (docs/posts.md#a-post-on-the-wire). The service's own tests make their reference formatter
 * alike rather than import this one: this suite imports no code of the service, nor they of it.
 */
export function wallClockNow(timeZone: string): number {
  let format = formats.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formats.set(timeZone, format);
  }
  const now = new Date();
  const parts = format.formatToParts(now);
  const part = (type: Intl.DateTimeFormatPartTypes) =>
    Number(parts.find((entry) => entry.type === type)?.value);
  return (
    Date.UTC(part("year"), part("month") - 1, part("day"), part("hour"), part("minute"), part("second")) +
    now.getUTCMilliseconds()
  );
}

/** A zone-less `yyyy-MM-ddTHH:mm:ss.SSS` read as if it were UTC, to compare with {@link wallClockNow}. */
export function wallClockOf(timestamp: string): number {
  return Date.parse(`${timestamp}Z`);
}
