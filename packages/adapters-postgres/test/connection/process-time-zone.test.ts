import { sql } from "kysely";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { describeOnEachEngine, useTestDatabase } from "../use-test-database.js";

// The whole file runs with the process in Newfoundland: a half-hour offset from UTC, with
// daylight saving time. Set before the databases open, because PGlite copies the process
// zone into its session when it starts.
beforeAll(() => {
  vi.stubEnv("TZ", "America/St_Johns");
});
afterAll(() => {
  vi.unstubAllEnvs();
});

const INSTANTS = [
  "2026-11-22T10:15:30.123Z",
  // Either side of St. John's clocks going forward (2026-03-08 02:00 local) and back
  // (2026-11-01 02:00 local): local wall-clock times that are skipped or happen twice.
  "2026-03-08T05:29:59.999Z",
  "2026-03-08T05:30:00.000Z",
  "2026-11-01T04:30:00.500Z",
  "2026-11-01T05:30:00.500Z",
  "1999-12-31T23:59:59.999Z",
].map((iso) => new Date(iso));

describeOnEachEngine("instants on %s with the process in another time zone", (engine) => {
  const database = useTestDatabase(engine);

  it("runs in the zone it claims to", () => {
    expect(new Date("2026-01-15T12:00:00Z").getTimezoneOffset()).toBe(210);
  });

  it("stores and reads back the instant given, not the local wall-clock time", async () => {
    const created = await database().users.create({
      email: `zone-${engine}@example.com`,
      passwordHash: "hash",
      createdAt: INSTANTS[0] as Date,
    });
    if (!created.ok) throw new Error(created.error);
    expect((await database().users.findById(created.value.id))?.createdAt).toStrictEqual(INSTANTS[0]);

    for (const instant of INSTANTS) {
      const post = await database().posts.create({
        authorId: created.value.id,
        title: instant.toISOString(),
        content: "c",
        createdAt: instant,
      });
      expect(post?.createdAt).toStrictEqual(instant);
      expect((await database().posts.findById(post?.id ?? 0))?.createdAt).toStrictEqual(instant);
      // The server holds that instant too, compared without any driver in between.
      const stored = await sql<{ same: boolean }>`
        SELECT created_at = ${instant.toISOString()}::timestamptz AS same
        FROM posts WHERE id = ${post?.id}`.execute(database().db);
      expect(stored.rows).toEqual([{ same: true }]);

      const later = new Date(instant.getTime() + 1);
      const updated = await database().posts.update({
        id: post?.id ?? 0,
        authorId: created.value.id,
        changes: { title: "updated" },
        now: later,
      });
      expect(updated.ok && updated.value.updatedAt).toStrictEqual(later);
    }
  });
});
