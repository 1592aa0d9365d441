import { PGlite } from "@electric-sql/pglite";
import { describe, expect, it } from "vitest";
import { CLUSTERED_TERMS, seed } from "../src/load/database.js";
import { renderTimeTo20, type TimeTo20 } from "../src/measure/report.js";

const result = (overrides: Partial<TimeTo20>): TimeTo20 => ({
  kind: "planted, rare and spread (titles)",
  term: "quokka",
  pages: 1,
  ms: 40,
  matches: 20,
  firstMs: 40,
  slowestLaterMs: 0,
  status: 200,
  gaveUp: false,
  ...overrides,
});

describe("the verdict on the time to twenty matches", () => {
  it("passes when every term reached twenty matches or the end within 3 pages and 300 ms", () => {
    const rendered = renderTimeTo20([
      result({}),
      result({ term: "absent", kind: "absent", pages: 3, ms: 299, matches: 0 }),
    ]);
    expect(rendered).toContain("0 of 2 terms past it | PASS");
  });

  it("fails a term that needed a fourth page, one over 300 ms, one given up and one refused, and names them", () => {
    const rendered = renderTimeTo20([
      result({}),
      result({ term: "waltz", kind: "clustered", pages: 4, ms: 120 }),
      result({ term: "nymph", kind: "clustered", pages: 1, ms: 301 }),
      result({ term: "z", kind: "clustered", pages: 400, ms: 30_000, matches: 3, gaveUp: true }),
      result({ term: "q", kind: "clustered", pages: 1, ms: 5, matches: 0, status: 503 }),
    ]);
    expect(rendered).toContain("4 of 5 terms past it | **FAIL**");
    for (const term of ["waltz", "nymph", "z", "q"]) expect(rendered).toContain(`\`${term}\``);
    expect(rendered).not.toContain("`quokka`");
    expect(rendered).toContain("400 (given up)");
  });
});

describe("the clustered terms the seed plants", () => {
  it("lie exactly in their stretches of ids, in their column, and nowhere else", async () => {
    const db = new PGlite();
    try {
      await db.exec(`
        create table users (id bigint generated always as identity primary key, email text not null,
          password_hash text not null, created_at timestamptz not null);
        create table posts (id bigint generated always as identity primary key, title varchar(255) not null,
          content text not null, created_at timestamptz not null, updated_at timestamptz not null,
          user_id bigint not null);`);
      const posts = 20_000;
      await seed(db, { users: 10, posts }, "x");
      for (const { term, column, from, to } of CLUSTERED_TERMS) {
        const other = column === "title" ? "content" : "title";
        const { rows } = await db.query<{
          first: number | null;
          last: number | null;
          n: number;
          elsewhere: number;
        }>(
          `select min(id)::int as first, max(id)::int as last, count(*)::int as n,
                  (select count(*)::int from posts where ${other} like '%' || $1 || '%') as elsewhere
             from posts where ${column} like '%' || $1 || '%'`,
          [term],
        );
        const expected = { first: Math.round(posts * from) + 1, last: Math.round(posts * to) };
        expect({ term, ...rows[0] }).toEqual({
          term,
          ...expected,
          n: expected.last - expected.first + 1,
          elsewhere: 0,
        });
      }
    } finally {
      await db.close();
    }
  });
});
