import { describeNeeding } from "@posts/domain/testing/vitest";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { postgres, serverUrl, useTestDatabase } from "../use-test-database.js";

// The driver's protocol parser is patched (patches/pg-protocol@1.16.1.patch): a message of
// megabytes gets room for all of it once its header has come, and a long text that is all ASCII
// is decoded as Latin-1. Both must leave every value exactly as PostgreSQL sent it.
const MIB = 1024 * 1024;

describeNeeding(postgres, "long texts through the driver", () => {
  const database = useTestDatabase("postgres", { migrate: false });
  let client: pg.Client;

  beforeAll(async () => {
    client = new pg.Client({ connectionString: serverUrl(database()) });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
  });

  const cases: [string, string][] = [
    ["all ASCII", "posts ".repeat(MIB)],
    ["ASCII but its last character", `${"a".repeat(3 * MIB)}é`],
    ["Korean", "본문".repeat(MIB)],
    ["characters of four bytes", "😀".repeat(MIB / 2)],
    ["ASCII just at the bound", "b".repeat(MIB)],
  ];

  for (const [name, text] of cases) {
    it(`reads a text of megabytes as it was sent: ${name}`, async () => {
      const { rows } = await client.query<{ text: string; bytes: number }>(
        "SELECT $1::text AS text, octet_length($1::text) AS bytes",
        [text],
      );
      expect(rows[0]?.bytes).toBe(Buffer.byteLength(text));
      expect(rows[0]?.text === text).toBe(true);
    });
  }

  it("reads rows of megabytes between small ones, each message whole and in order", async () => {
    const { rows } = await client.query<{ n: number; text: string }>(
      `SELECT n, CASE WHEN n % 2 = 0 THEN repeat(chr(97 + n), 2 * 1024 * 1024 + n) ELSE 'small ' || n END AS text
       FROM generate_series(1, 6) AS n ORDER BY n`,
    );
    expect(rows.map((row) => row.n)).toEqual([1, 2, 3, 4, 5, 6]);
    for (const { n, text } of rows) {
      expect(text === (n % 2 === 0 ? String.fromCharCode(97 + n).repeat(2 * MIB + n) : `small ${n}`)).toBe(
        true,
      );
    }
  });
});
