import { timestampFormatter } from "@posts/adapters-http";
import { aPost, aUser } from "@posts/domain/testing";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TIMESTAMP } from "../support/expectations.js";
import { tokenFor } from "../support/mint-token.js";
import { buildTestApp } from "../support/test-app.js";

describe("timestampFormatter", () => {
  const instant = new Date("2026-11-22T15:04:05.007Z");

  it("formats UTC as yyyy-MM-ddTHH:mm:ss.SSS, always with milliseconds", () => {
    expect(timestampFormatter("UTC")(instant)).toBe("2026-11-22T15:04:05.007");
    expect(timestampFormatter("UTC")(new Date("2026-01-01T00:00:00.000Z"))).toBe("2026-01-01T00:00:00.000");
    expect(timestampFormatter("Etc/UTC")(instant)).toBe("2026-11-22T15:04:05.007");
  });

  it("converts to the zone, across a day boundary", () => {
    expect(timestampFormatter("Asia/Seoul")(instant)).toBe("2026-11-23T00:04:05.007");
    expect(timestampFormatter("Asia/Kathmandu")(instant)).toBe("2026-11-22T20:49:05.007");
    expect(timestampFormatter("America/St_Johns")(instant)).toBe("2026-11-22T11:34:05.007");
  });

  it("follows daylight saving time", () => {
    const newYork = timestampFormatter("America/New_York");
    expect(newYork(new Date("2026-07-01T12:00:00.999Z"))).toBe("2026-07-01T08:00:00.999");
    expect(newYork(new Date("2026-12-01T12:00:00.000Z"))).toBe("2026-12-01T07:00:00.000");
    // 00:00 local is 24 in some formatters' hour cycle; never here.
    expect(newYork(new Date("2026-12-01T05:00:00.000Z"))).toBe("2026-12-01T00:00:00.000");
  });

  it("matches the contract's pattern for many instants in several zones", () => {
    for (const zone of ["UTC", "Asia/Seoul", "Pacific/Chatham", "America/Los_Angeles"]) {
      const format = timestampFormatter(zone);
      for (let i = 0; i < 200; i++) {
        const date = new Date(Date.UTC(2000, 0, 1) + i * 7_919_876_543);
        expect(format(date)).toMatch(TIMESTAMP);
      }
    }
  });

  it("throws a RangeError for an unknown zone", () => {
    expect(() => timestampFormatter("Nowhere/Special")).toThrow(RangeError);
  });
});

// Date.UTC reads years 0–99 as 1900–1999, so the ends of 0000–9999 are parsed.
const FIRST_MS = Date.parse("0000-01-01T00:00:00.000Z");
const LAST_MS = Date.parse("9999-12-31T23:59:59.999Z");
const MINUTE = 60_000;

/**
 * The wire text from a fresh `Intl.DateTimeFormat` per call, with Intl's own padding and
 * milliseconds: nothing shared with the formatter's arithmetic or its offset cache. Years 1000 on
 * only, as Intl's year is the era's.
 */
function reference(timeZone: string, instant: Date): string {
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    fractionalSecondDigits: 3,
    hourCycle: "h23",
  });
  const fields: Partial<Record<Intl.DateTimeFormatPartTypes, string>> = {};
  for (const part of format.formatToParts(instant)) fields[part.type] = part.value;
  const { year, month, day, hour, minute, second, fractionalSecond } = fields;
  return `${year}-${month}-${day}T${hour}:${minute}:${second}.${fractionalSecond}`;
}

/** Every `step` from `from` to `to`, each also checked one millisecond earlier. */
function expectWalkMatches(timeZone: string, from: number, to: number, step: number): void {
  const format = timestampFormatter(timeZone);
  for (let time = from; time <= to; time += step) {
    for (const instant of [new Date(time - 1), new Date(time)]) {
      expect(format(instant), instant.toISOString()).toBe(reference(timeZone, instant));
    }
  }
}

describe("timestampFormatter against references", () => {
  it("formats UTC as the ISO string does, for any instant in years 0000–9999", () => {
    const format = timestampFormatter("UTC");
    fc.assert(
      fc.property(fc.integer({ min: FIRST_MS, max: LAST_MS }), (time) => {
        const instant = new Date(time);
        expect(format(instant)).toBe(instant.toISOString().slice(0, 23));
      }),
      { numRuns: 20_000 },
    );
  });

  it("formats UTC at the ends of days, years and the range, before and after 1970", () => {
    const format = timestampFormatter("UTC");
    const cases: [string, string][] = [
      ["1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999"],
      ["1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.000"],
      ["1900-02-28T23:59:59.999Z", "1900-02-28T23:59:59.999"],
      ["1900-03-01T00:00:00.000Z", "1900-03-01T00:00:00.000"],
      ["2000-02-29T23:59:59.999Z", "2000-02-29T23:59:59.999"],
      ["2024-12-31T23:59:59.999Z", "2024-12-31T23:59:59.999"],
      ["1600-12-31T23:59:59.999Z", "1600-12-31T23:59:59.999"],
      ["0001-01-01T00:00:00.000Z", "0001-01-01T00:00:00.000"],
      ["0000-01-01T00:00:00.000Z", "0000-01-01T00:00:00.000"],
      ["9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999"],
    ];
    for (const [iso, wire] of cases) expect(format(new Date(iso)), iso).toBe(wire);
  });

  it("keeps the ISO string's form outside years 0000–9999, and throws for an invalid Date", () => {
    const format = timestampFormatter("UTC");
    for (const time of [FIRST_MS - 1, LAST_MS + 1, -8.64e15, 8.64e15]) {
      const instant = new Date(time);
      expect(format(instant)).toBe(instant.toISOString().slice(0, 23));
    }
    expect(format(new Date(FIRST_MS - 1))).toBe("-000001-12-31T23:59:59.");
    expect(() => format(new Date(Number.NaN))).toThrow(RangeError);
    expect(() => timestampFormatter("Asia/Seoul")(new Date(Number.NaN))).toThrow(RangeError);
  });

  // Lord Howe moves by 30 minutes; Kathmandu, Chatham and St John's are off the hour; Dublin,
  // Monrovia and Seoul's early years have offsets with seconds. Amsterdam had them too (+00:19:32)
  // until tzdb 2022b made it a link to Brussels; it stays for the runtimes that keep them.
  it.each([
    "Asia/Seoul",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "America/St_Johns",
    "Europe/Amsterdam",
    "Europe/Dublin",
    "Africa/Monrovia",
  ])("formats %s as Intl does, for any instant in 1900–2100", (timeZone) => {
    const format = timestampFormatter(timeZone);
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(1900, 0, 1), max: Date.UTC(2101, 0, 1) - 1 }), (time) => {
        const instant = new Date(time);
        expect(format(instant)).toBe(reference(timeZone, instant));
      }),
      { numRuns: 1_000 },
    );
  });

  // Minute by minute across each transition: a cached block that straddles one shows here. Today's
  // transitions fall on block edges; Seoul's of 1908, at 15:32:08Z, falls inside one.
  it("follows transitions minute by minute", () => {
    const around = (iso: string): [number, number] => [
      Date.parse(iso) - 3 * 60 * MINUTE,
      Date.parse(iso) + 3 * 60 * MINUTE,
    ];
    for (const [timeZone, transition] of [
      ["America/New_York", "2026-03-08T07:00:00.000Z"],
      ["America/New_York", "2026-11-01T06:00:00.000Z"],
      ["Australia/Lord_Howe", "2026-04-04T15:00:00.000Z"],
      ["Australia/Lord_Howe", "2026-10-03T15:30:00.000Z"],
      ["Asia/Seoul", "1908-03-31T15:32:08.000Z"],
    ] as const) {
      const [from, to] = around(transition);
      expectWalkMatches(timeZone, from, to, MINUTE);
    }
    const newYork = timestampFormatter("America/New_York");
    expect(newYork(new Date("2026-03-08T06:59:59.999Z"))).toBe("2026-03-08T01:59:59.999");
    expect(newYork(new Date("2026-03-08T07:00:00.000Z"))).toBe("2026-03-08T03:00:00.000");
    expect(newYork(new Date("2026-11-01T05:59:59.999Z"))).toBe("2026-11-01T01:59:59.999");
    expect(newYork(new Date("2026-11-01T06:00:00.000Z"))).toBe("2026-11-01T01:00:00.000");
    const lordHowe = timestampFormatter("Australia/Lord_Howe");
    expect(lordHowe(new Date("2026-04-04T14:59:59.999Z"))).toBe("2026-04-05T01:59:59.999");
    expect(lordHowe(new Date("2026-04-04T15:00:00.000Z"))).toBe("2026-04-05T01:30:00.000");
  });

  it("follows a transition at an odd second between offsets with seconds", () => {
    // Dublin went from -00:25:21 to +00:34:39 at 1916-05-21T02:25:21Z.
    const transition = Date.parse("1916-05-21T02:25:21.000Z");
    expectWalkMatches("Europe/Dublin", transition - 30 * MINUTE, transition + 30 * MINUTE, 7_000);
    const dublin = timestampFormatter("Europe/Dublin");
    expect(dublin(new Date(transition - 1))).toBe("1916-05-21T01:59:59.999");
    expect(dublin(new Date(transition))).toBe("1916-05-21T03:00:00.000");
  });

  it("stays right across the offset cache being cleared", () => {
    // 4,500 blocks of 15 minutes, across Seoul's 1987 daylight saving time, then the first again.
    const from = Date.UTC(1987, 3, 10, 0, 0, 7, 123);
    expectWalkMatches("Asia/Seoul", from, from + 4_500 * 15 * MINUTE, 15 * MINUTE);
    expectWalkMatches("Asia/Seoul", from, from + 100 * 15 * MINUTE, 7 * MINUTE);
  });

  it("converts instants before 1970 and at the ends of days and years", () => {
    const cases: [string, string, string][] = [
      ["Asia/Seoul", "1969-12-31T23:59:59.999Z", "1970-01-01T08:59:59.999"],
      ["Asia/Seoul", "1905-06-01T12:00:00.000Z", "1905-06-01T20:27:52.000"],
      ["Asia/Seoul", "2024-12-31T14:59:59.999Z", "2024-12-31T23:59:59.999"],
      ["Asia/Seoul", "2024-12-31T15:00:00.000Z", "2025-01-01T00:00:00.000"],
      ["America/New_York", "1950-01-01T04:59:59.999Z", "1949-12-31T23:59:59.999"],
      ["America/New_York", "2025-01-01T04:59:59.999Z", "2024-12-31T23:59:59.999"],
      ["Pacific/Chatham", "2024-02-29T10:14:59.999Z", "2024-02-29T23:59:59.999"],
      ["Europe/Dublin", "1910-01-01T00:25:20.999Z", "1909-12-31T23:59:59.999"],
    ];
    for (const [timeZone, iso, wire] of cases) {
      const instant = new Date(iso);
      expect(timestampFormatter(timeZone)(instant), `${timeZone} ${iso}`).toBe(wire);
      expect(reference(timeZone, instant), `${timeZone} ${iso}`).toBe(wire);
    }
  });

  it("formats zoned years 0000–0099 by the proleptic calendar, and keeps the ISO form past 9999", () => {
    // Seoul kept local mean time, +08:27:52, until 1908.
    const seoul = timestampFormatter("Asia/Seoul");
    expect(seoul(new Date("0050-06-01T12:00:00.000Z"))).toBe("0050-06-01T20:27:52.000");
    expect(seoul(new Date("0000-01-01T00:00:00.000Z"))).toBe("0000-01-01T08:27:52.000");
    expect(seoul(new Date("9999-12-31T14:59:59.999Z"))).toBe("9999-12-31T23:59:59.999");
    expect(seoul(new Date("9999-12-31T20:00:00.000Z"))).toBe("+010000-01-01T05:00:00.");
  });
});

describe("timestamps on the wire", () => {
  it("are in the app's time zone: posts, users and error envelopes", async () => {
    const { app, deps } = await buildTestApp({ timeZone: "Asia/Seoul" });
    const author = await aUser(deps.users, { createdAt: new Date("2026-11-22T15:30:00.000Z") });
    const post = await aPost(deps.posts, author, { createdAt: new Date("2026-11-22T15:04:05.007Z") });
    const read = (await app.inject({ method: "GET", url: `/api/v1/posts/${post.id}` })).json();
    expect(read.createdAt).toBe("2026-11-23T00:04:05.007");
    expect(read.updatedAt).toBe("2026-11-23T00:04:05.007");
    const me = await app.inject({
      method: "GET",
      url: "/api/v1/user",
      headers: { "x-auth-token": tokenFor(author) },
    });
    expect(me.json().createdAt).toBe("2026-11-23T00:30:00.000");
    // The envelope is stamped with the clock (2026-11-22T10:15:30.123Z), in the same zone.
    const missing = (await app.inject({ method: "GET", url: "/nowhere" })).json();
    expect(missing.timestamp).toBe("2026-11-22T19:15:30.123");
    await app.close();
  });
});
