import {
  PostgresPostRepository,
  PostgresUserRepository,
  parseInt8,
  parseTimestamptz,
} from "@posts/adapters-postgres";
import { sql } from "kysely";
import { beforeEach, describe, expect, it } from "vitest";
import { describeOnEachEngine, useTestDatabase } from "../use-test-database.js";

describe("parseInt8", () => {
  it("reads int8 text, numbers and bigints within the safe range", () => {
    expect(parseInt8("42")).toBe(42);
    expect(parseInt8("-9007199254740991")).toBe(-Number.MAX_SAFE_INTEGER);
    expect(parseInt8("9007199254740991")).toBe(Number.MAX_SAFE_INTEGER);
    expect(parseInt8(7)).toBe(7);
    expect(parseInt8(7n)).toBe(7);
  });

  it("refuses what would be rounded, with a message that says so", () => {
    for (const value of [
      "9007199254740992",
      "9223372036854775807",
      "-9007199254740992",
      2n ** 53n,
      2 ** 53,
    ]) {
      expect(() => parseInt8(value)).toThrow(/beyond JavaScript's safe integer range/);
    }
  });
});

describe("parseTimestamptz", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["2026-11-22 10:15:30.123+00", "2026-11-22T10:15:30.123Z"],
    ["2026-11-22 05:15:30.123-05", "2026-11-22T10:15:30.123Z"],
    ["2026-11-22 15:30:30.123+05:15", "2026-11-22T10:15:30.123Z"],
    ["2026-11-22 10:15:30+00", "2026-11-22T10:15:30.000Z"],
    ["2026-11-22 10:15:30.1+00", "2026-11-22T10:15:30.100Z"],
    // Microseconds: a Date keeps milliseconds, and never rounds up into the next one.
    ["2026-11-22 10:15:30.123999+00", "2026-11-22T10:15:30.123Z"],
    // Local mean time before standard zones: offsets with seconds.
    ["1850-01-01 00:00:00-04:56:02", "1850-01-01T04:56:02.000Z"],
    ["0050-03-01 00:00:00+00", "0050-03-01T00:00:00.000Z"],
    ["10000-01-01 00:00:00+00", "+010000-01-01T00:00:00.000Z"],
    ["2026-11-22 10:15:30.12+00", "2026-11-22T10:15:30.120Z"],
    ["2026-11-22 10:15:30.123456-09:30", "2026-11-22T19:45:30.123Z"],
  ];
  it.each(cases)("reads %s as %s", (text, iso) => {
    expect(parseTimestamptz(text).toISOString()).toBe(iso);
  });

  it("reads every fraction length and offset form as the instant it names", () => {
    const pad = (n: number, width = 2) => String(n).padStart(width, "0");
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 2000; i++) {
      const instant = Date.UTC(
        100 + next(9900),
        next(12),
        1 + next(28),
        next(24),
        next(60),
        next(60),
        next(1000),
      );
      const offsetSeconds = (next(2) === 0 ? -1 : 1) * (next(15) * 3600 + [0, 1800, 2700, 122][next(4)]!);
      const wall = new Date(instant + offsetSeconds * 1000);
      const fraction = [
        "",
        `.${pad(wall.getUTCMilliseconds(), 3)}`,
        `.${pad(wall.getUTCMilliseconds(), 3)}999`,
      ][next(3)]!;
      const magnitude = Math.abs(offsetSeconds);
      const hh = pad(Math.floor(magnitude / 3600));
      const mm = Math.floor(magnitude / 60) % 60;
      const ss = magnitude % 60;
      const offset = `${offsetSeconds < 0 ? "-" : "+"}${hh}${mm || ss ? `:${pad(mm)}` : ""}${ss ? `:${pad(ss)}` : ""}`;
      const text =
        `${pad(wall.getUTCFullYear(), 4)}-${pad(wall.getUTCMonth() + 1)}-${pad(wall.getUTCDate())} ` +
        `${pad(wall.getUTCHours())}:${pad(wall.getUTCMinutes())}:${pad(wall.getUTCSeconds())}${fraction}${offset}`;
      const expected = fraction === "" ? instant - wall.getUTCMilliseconds() : instant;
      expect(parseTimestamptz(text).getTime(), text).toBe(expected);
    }
  });

  it("refuses what is no instant it can represent", () => {
    for (const text of [
      "infinity",
      "-infinity",
      "0044-03-15 12:00:00+00 BC",
      "11/22/2026 10:15:30 UTC",
      "2026-11-22 10:15:30.+00",
      "2026-11-22 10:15:30+0",
      "2026-11-22 10:15:30+00:0",
      "2026-11-22 1a:15:30+00",
      "",
    ]) {
      expect(() => parseTimestamptz(text)).toThrow(/cannot read timestamptz/);
    }
  });
});

describeOnEachEngine("values read from %s", (engine) => {
  const database = useTestDatabase(engine);
  beforeEach(async () => database().truncate());

  const insertUser = (id: number | string, email: string) =>
    sql`
      INSERT INTO users (id, email, password_hash, created_at) OVERRIDING SYSTEM VALUE
      VALUES (${String(id)}::bigint, ${email}, 'hash', now())`.execute(database().db);

  it("reads ids up to Number.MAX_SAFE_INTEGER exactly", async () => {
    await insertUser(Number.MAX_SAFE_INTEGER, "largest@example.com");
    expect((await database().users.findById(Number.MAX_SAFE_INTEGER))?.id).toBe(Number.MAX_SAFE_INTEGER);
  });

  it("fails clearly, and keeps working, when an id is beyond 2^53", async () => {
    await insertUser(`${2n ** 53n + 10n}`, "beyond@example.com");
    await sql`
      INSERT INTO posts (title, content, created_at, updated_at, user_id)
      VALUES ('t', 'c', now(), now(), ${String(2n ** 53n + 10n)}::bigint)`.execute(database().db);
    const message = /int8 value 9007199254741002 is beyond JavaScript's safe integer range/;
    await expect(database().users.findByEmail("beyond@example.com")).rejects.toThrow(message);
    await expect(database().posts.listPage({ limit: 10 })).rejects.toThrow(message);
    // The connection (PGlite's only one) is still usable.
    await insertUser(5, "after@example.com");
    expect((await database().users.findByEmail("after@example.com"))?.id).toBe(5);
  });

  it("reads instants whatever the session time zone, offsets with seconds included", async () => {
    // Everything on one connection: a SET applies to one session, and PGlite has no other.
    await database()
      .db.connection()
      .execute(async (connection) => {
        const users = new PostgresUserRepository(connection);
        const posts = new PostgresPostRepository(connection);
        const created = await users.create({
          email: "zones@example.com",
          passwordHash: "h",
          createdAt: new Date(),
        });
        if (!created.ok) throw new Error(created.error);
        try {
          for (const zone of ["America/New_York", "Asia/Kathmandu", "Pacific/Chatham", "Europe/Amsterdam"]) {
            await sql`SELECT set_config('TimeZone', ${zone}, false)`.execute(connection);
            // One millisecond before New York's clocks go forward.
            const createdAt = new Date("2026-03-08T06:59:59.999Z");
            const post = await posts.create({
              authorId: created.value.id,
              title: zone,
              content: "c",
              createdAt,
            });
            expect((await posts.findById(post?.id ?? 0))?.createdAt.toISOString()).toBe(
              createdAt.toISOString(),
            );

            // The server's own idea of each instant against the parsed Date; in these zones the
            // 1850 one is printed in local mean time, an offset with seconds (e.g. +05:41:16).
            const instants = await sql<{ read: Date; ms: number; text: string }>`
              SELECT ts AS read, extract(epoch FROM ts)::float8 * 1000 AS ms, ts::text AS text
              FROM (VALUES ('1850-06-01 12:00:00+00'::timestamptz), ('1969-12-31 23:59:59.999+00'),
                           ('2026-03-08 07:30:00.5+00'), ('2026-10-25 00:30:00.25+00')) AS v (ts)`.execute(
              connection,
            );
            for (const row of instants.rows) {
              expect(`${row.text} is ${row.read.getTime()}`).toBe(`${row.text} is ${row.ms}`);
            }
          }
        } finally {
          await sql`RESET TimeZone`.execute(connection);
        }
      });
  });
});
