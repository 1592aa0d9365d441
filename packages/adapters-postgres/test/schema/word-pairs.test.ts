import { sql } from "kysely";
import { expect, it } from "vitest";
import { wordPairsOf } from "../../src/repositories/posts/partition-search.js";
import { describeOnEachEngine, useTestDatabase } from "../use-test-database.js";

/** An integer in [0, n). */
const below = (n: number) => Math.floor(Math.random() * n);

/**
 * Texts of a few short words over few letters (so that words repeat and pairs come back), a
 * Korean one and an accented capital among them, apart by one space or several.
 */
function randomText(words: number): string {
  const vocabulary = ["ab", "abc", "Abcd", "bca", "c", "ca", "한국어", "Éa", "x.y", "cab,", "abab"];
  return Array.from({ length: words }, () => vocabulary[below(vocabulary.length)])
    .map((word, i) => (i === 0 ? word : `${" ".repeat(1 + (below(4) === 0 ? 1 : 0))}${word}`))
    .join("");
}

describeOnEachEngine("the pairs of words of a post on %s", (engine) => {
  const database = useTestDatabase(engine);
  const pairs = async (title: string, content: string) =>
    (
      await sql<{ pairs: string[] }>`SELECT post_word_pairs(${title}, ${content}) AS pairs`.execute(
        database().db,
      )
    ).rows[0]?.pairs;

  it("lists each word's last three characters and the next one's first three, in the title and in the content apart", async () => {
    // Runs of characters other than the space; lower-cased in "C" (ASCII letters only), each
    // pair once, in the order of their bytes; the title's last word and the content's first are
    // no pair.
    expect(await pairs("Post number 12", "Lorem ipsum,  DOLOR sit ipsum, dolor")).toEqual([
      "ber 12",
      "lor sit",
      "ost num",
      "rem ips",
      "sit ips",
      "um, dol",
    ]);
    expect(await pairs("ÉCOLE été", " 한국어 글  ")).toEqual(["ole été", "한국어 글"]);
    expect(await pairs("one", "")).toEqual([]);
    // Past 8192 bytes the content may hold more than was read: '' stands for what was not.
    const long = await pairs("", `${"ab ".repeat(3000)}cd`);
    expect(long).toEqual(["ab ab", ""]);
  });

  it("holds every pair a term shows, wherever the term is in a post (the index finds every match)", async () => {
    const cases: { text: string; term: string; pairs: string[] }[] = [];
    for (let i = 0; i < 400; i++) {
      const text = randomText(2 + below(12));
      const chars = [...text];
      const start = below(chars.length - 1);
      const term = chars.slice(start, start + 1 + below(chars.length - start)).join("");
      cases.push({ text, term, pairs: wordPairsOf(term) });
    }
    // Some terms show no pair (one word, or sides too short to know); enough of them show one.
    expect(cases.filter((each) => each.pairs.length > 0).length).toBeGreaterThan(100);
    const { rows } = await sql<{ i: number }>`
      SELECT c.i::int AS i
      FROM jsonb_array_elements(${JSON.stringify(cases)}::jsonb) WITH ORDINALITY AS c (value, i)
      WHERE NOT (post_word_pairs(c.value->>'text', '') @> ARRAY(SELECT jsonb_array_elements_text(c.value->'pairs'))
                 AND post_word_pairs('', c.value->>'text') @> ARRAY(SELECT jsonb_array_elements_text(c.value->'pairs')))`.execute(
      database().db,
    );
    expect(rows.map(({ i }) => cases[i - 1])).toEqual([]);
  });
});

it("shows a pair of a term only where the term shows both sides", () => {
  // Three characters of each side, or the whole word (a space in the term beside it).
  expect(wordPairsOf("amet dolor")).toEqual(["met dol"]);
  expect(wordPairsOf("Ipsum LOREM sit")).toEqual(["sum lor", "rem sit"]);
  expect(wordPairsOf("et do")).toEqual([]);
  expect(wordPairsOf(" et do ")).toEqual(["et do"]);
  expect(wordPairsOf("m a b c")).toEqual(["a b"]);
  expect(wordPairsOf("한국어  글 ")).toEqual(["한국어 글"]);
  expect(wordPairsOf("one")).toEqual([]);
  expect(wordPairsOf("   ")).toEqual([]);
  expect(wordPairsOf("abc abc abc")).toEqual(["abc abc"]);
});
