import { sql } from "kysely";
import { expect, it } from "vitest";
import { charPairsOf, lookupOf } from "../../src/repositories/posts/partition-search.js";
import { describeOnEachEngine, useTestDatabase } from "../use-test-database.js";

/** An integer in [0, n). */
const below = (n: number) => Math.floor(Math.random() * n);

/**
 * Texts over few characters (so that pairs come back), with capitals, an accented and a Korean
 * letter, a digit, punctuation, a line break and the unit separator the function splits at.
 */
function randomText(length: number): string {
  const alphabet = ["a", "b", "A", "B", " ", "4", ".", "é", "É", "한", "\n", "\x1f"];
  return Array.from({ length }, () => alphabet[below(alphabet.length)]).join("");
}

describeOnEachEngine("the pairs of characters of a post on %s", (engine) => {
  const database = useTestDatabase(engine);
  const pairs = async (title: string, content: string) =>
    (
      await sql<{ pairs: string[] }>`SELECT post_char_pairs(${title}, ${content}) AS pairs`.execute(
        database().db,
      )
    ).rows[0]?.pairs;

  it("lists each pair of consecutive characters of the title then the content once, and the first and last alone", async () => {
    // Lower-cased in "C" (ASCII letters only), in the order of their bytes; the title's last
    // character and the content's first make a pair too.
    expect(await pairs("Ab", "c D")).toEqual([" d", "a", "ab", "bc", "c ", "d"]);
    expect(await pairs("ÉÉ", "한\n")).toEqual(["\n", "É", "ÉÉ", "É한", "한\n"]);
    expect(await pairs("aaa", "")).toEqual(["a", "aa"]);
    expect(await pairs("", "")).toEqual([]);
    // Past 8192 bytes the content may hold more than was read: '' stands for what was not.
    expect(await pairs("", `${"ab".repeat(4096)}c`)).toEqual(["a", "ab", "b", "ba", ""]);
    // A text holding the separator the pairs are cut at is a candidate of every term.
    expect((await pairs("a\x1fb", ""))?.at(-1)).toBe("");
  });

  it("holds every pair of a term wherever a post holds the term (the index finds every match)", async () => {
    const cases: { title: string; content: string; term: string }[] = [];
    for (let i = 0; i < 400; i++) {
      const text = randomText(2 + below(30));
      const chars = [...text];
      const start = below(chars.length - 1);
      const term = chars.slice(start, start + 2 + below(chars.length - start - 1)).join("");
      // The term in the title or in the content, with other text around it or not.
      const [title, content] = below(2) === 0 ? [text, randomText(below(10))] : [randomText(below(10)), text];
      cases.push({ title, content, term: below(2) === 0 ? term : term.toUpperCase() });
    }
    const { rows } = await sql<{ i: number }>`
      SELECT c.i::int AS i
      FROM jsonb_array_elements(${JSON.stringify(cases.map((each) => ({ ...each, pairs: charPairsOf(each.term) })))}::jsonb)
           WITH ORDINALITY AS c (value, i)
      WHERE (c.value->>'title' COLLATE "C" ILIKE '%' || (c.value->>'term') || '%'
             OR c.value->>'content' COLLATE "C" ILIKE '%' || (c.value->>'term') || '%')
        AND NOT (post_char_pairs(c.value->>'title', c.value->>'content')
                   @> ARRAY(SELECT jsonb_array_elements_text(c.value->'pairs'))
                 OR post_char_pairs(c.value->>'title', c.value->>'content') @> '{""}'::text[])`.execute(
      database().db,
    );
    expect(rows.map(({ i }) => cases[i - 1])).toEqual([]);
  });
});

it("asks the trigram indexes for a term with a trigram of two letters or digits, the characters for one character, the pairs for the rest", () => {
  expect(charPairsOf("4 ")).toEqual(["4 "]);
  expect(charPairsOf("ZzZ")).toEqual(["zz"]);
  expect(charPairsOf("aÉ한")).toEqual(["aÉ", "É한"]);
  expect(charPairsOf("a")).toEqual([]);
  expect(lookupOf("dolor")).toEqual({ lookup: "trigrams" });
  expect(lookupOf("Z")).toEqual({ lookup: "chars", elements: ["z"] });
  expect(lookupOf("4 ")).toEqual({ lookup: "charPairs", elements: ["4 "] });
  expect(lookupOf("ab.")).toEqual({ lookup: "trigrams" });
  expect(lookupOf("ng. 73")).toEqual({ lookup: "trigrams" });
  // Trigrams of one letter or digit only ("  b", "  s": words that start with it).
  expect(lookupOf("a.b")).toEqual({ lookup: "charPairs", elements: ["a.", ".b"] });
  expect(lookupOf("7 s")).toEqual({ lookup: "charPairs", elements: ["7 ", " s"] });
  expect(lookupOf(". ,")).toEqual({ lookup: "charPairs", elements: [". ", " ,"] });
});
