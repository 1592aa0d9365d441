/**
 * The canonical IANA name of a time zone (`Asia/Seoul` for `asia/seoul`, `UTC` for `utc`), as the
 * runtime's time zone data spells it. Two spellings of one zone must write the same timestamps and
 * the same entity tags, so every place that keys anything on the zone keys it on this name.
 * Throws a `RangeError` for a name the runtime does not know.
 */
export function canonicalTimeZone(name: string): string {
  return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
}
