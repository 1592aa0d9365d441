import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type EntityTag,
  formatEntityTag,
  matchesWeakly,
  parseEntityTagCondition,
} from "../../src/http/entity-tag-condition.js";

const strong = (opaque: string): EntityTag => ({ weak: false, opaque });
const weak = (opaque: string): EntityTag => ({ weak: true, opaque });

// RFC 9110 as a regular expression, independently of the parser: sections 8.8.3 (entity-tag),
// 5.6.1.2 (the #rule as a recipient reads it: `[ element ] *( OWS "," OWS [ element ] )`) and 13.1.1.
const TAG = String.raw`(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"`;
const OWS = "[ \\t]*";
const FIELD = new RegExp(`^${OWS}(?:\\*|(?:${TAG})?(?:${OWS},${OWS}(?:${TAG})?)*)${OWS}$`);
const TAGS = /(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"/g;

/** What the grammar says a header value means: "*", its tags, or [] when it is not one. */
function byTheGrammar(value: string): "*" | EntityTag[] {
  if (!FIELD.test(value)) return [];
  if (value.trim() === "*") return "*";
  return [...value.matchAll(TAGS)].map((match) => ({ weak: match[1] !== undefined, opaque: match[2] ?? "" }));
}

// Opaque-tag characters, the commas and quotes that may appear in them, and neighbours that may not.
const etagc = fc.oneof(
  fc.constantFrom("a", "Z", "0", "!", "#", "~", ",", "/", "\\", "W", "*", "\x80", "\xff"),
  fc
    .integer({ min: 0x21, max: 0x7e })
    .filter((code) => code !== 0x22)
    .map((code) => String.fromCharCode(code)),
);
const entityTag = fc.record({ weak: fc.boolean(), opaque: fc.string({ unit: etagc, maxLength: 12 }) });
const ows = fc.constantFrom("", " ", "\t", "  \t ");

describe("parseEntityTagCondition", () => {
  it("answers undefined for an absent header", () => {
    expect(parseEntityTagCondition(undefined)).toBeUndefined();
  });

  it("reads * alone, with optional whitespace around it, as any", () => {
    for (const value of ["*", " *", "* ", "\t*\t"]) expect(parseEntityTagCondition(value)).toBe("*");
  });

  it("reads strong and weak tags, in order, whitespace around commas and empty elements allowed", () => {
    expect(parseEntityTagCondition('"a"')).toEqual([strong("a")]);
    expect(parseEntityTagCondition('W/"a"')).toEqual([weak("a")]);
    expect(parseEntityTagCondition('"a", W/"b" ,"c"')).toEqual([strong("a"), weak("b"), strong("c")]);
    expect(parseEntityTagCondition(' , "a",, ,\t"b" , ')).toEqual([strong("a"), strong("b")]);
    expect(parseEntityTagCondition('""')).toEqual([strong("")]);
    expect(parseEntityTagCondition('"*"')).toEqual([strong("*")]);
  });

  it("keeps commas, slashes and backslashes inside an opaque-tag as part of it", () => {
    expect(parseEntityTagCondition('"a,b", "c"')).toEqual([strong("a,b"), strong("c")]);
    expect(parseEntityTagCondition('"W/x\\"')).toEqual([strong("W/x\\")]);
  });

  it("accepts obs-text (bytes 0x80–0xFF, as Node reads them) inside an opaque-tag", () => {
    expect(parseEntityTagCondition('"\x80\xe9\xff"')).toEqual([strong("\x80\xe9\xff")]);
  });

  it("reads an empty header or a list of empty elements as an empty list", () => {
    for (const value of ["", " ", ",", " , ,\t,"]) expect(parseEntityTagCondition(value)).toEqual([]);
  });

  it("reads a header sent twice as one combined list", () => {
    expect(parseEntityTagCondition(['"a"', 'W/"b"'])).toEqual([strong("a"), weak("b")]);
    // "*" combined with anything is no longer "*" alone: malformed.
    expect(parseEntityTagCondition(["*", '"a"'])).toEqual([]);
  });

  it("refuses a malformed value whole: it names nothing", () => {
    for (const value of [
      "a",
      '"a',
      'a"',
      'w/"a"',
      'W/ "a"',
      'W /"a"',
      "W/a",
      '"a" "b"',
      '"a""b"',
      '"a";q=1',
      '"a", b',
      '"a" b',
      '*, "a"',
      '"a", *',
      "**",
      "* *",
      '"a b"',
      '"a\tb"',
      '"a\x7f"',
      '"a\x00"',
      '"a\x1f"',
      '"가"',
      '"\u0100"',
      '"a\\"b"',
      "'a'",
    ]) {
      expect(parseEntityTagCondition(value), JSON.stringify(value)).toEqual([]);
    }
  });

  it("reads back every list of tags it is given, however it is spaced and whatever empty elements it has", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.option(entityTag, { nil: undefined }), ows, ows), { maxLength: 8 }),
        ows,
        (elements, leading) => {
          const value =
            leading +
            elements
              .map(
                ([tag, before, after]) => `${before}${tag === undefined ? "" : formatEntityTag(tag)}${after}`,
              )
              .join(",");
          const expected = elements.flatMap(([tag]) => (tag === undefined ? [] : [tag]));
          expect(parseEntityTagCondition(value)).toEqual(expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("agrees with the RFC 9110 grammar on any string of the pieces that matter", () => {
    const valid = fc.constantFrom('"a"', 'W/"b"', '""', '"a,b"', '"\xff"', "*", "");
    const broken = fc.constantFrom('"\x7f"', '"\u0100"', '"a b"', "W/", "w/", '"', "a", ";", "/", "\t\t");
    const separator = fc.constantFrom(",", ", ", " ,", "\t,\t", "", " ");
    // Mostly well-formed pieces, so that lists that parse come up as often as ones that do not.
    const value = fc
      .array(
        fc.tuple(fc.oneof({ arbitrary: valid, weight: 5 }, { arbitrary: broken, weight: 1 }), separator),
        {
          maxLength: 6,
        },
      )
      .map((pieces) => pieces.map(([piece, after]) => piece + after).join(""));
    fc.assert(
      fc.property(value, (header) => {
        expect(parseEntityTagCondition(header)).toEqual(byTheGrammar(header));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("matchesWeakly", () => {
  it("ignores W/ on either side, matches * always, and an empty list never", () => {
    expect(matchesWeakly([strong("a")], strong("a"))).toBe(true);
    expect(matchesWeakly([weak("a")], strong("a"))).toBe(true);
    expect(matchesWeakly([strong("a")], weak("a"))).toBe(true);
    expect(matchesWeakly([strong("b"), weak("a")], weak("a"))).toBe(true);
    expect(matchesWeakly("*", strong("a"))).toBe(true);
    expect(matchesWeakly([strong("A")], strong("a"))).toBe(false);
    expect(matchesWeakly([], strong("a"))).toBe(false);
  });
});

describe("formatEntityTag", () => {
  it("quotes the opaque part and prefixes W/ to a weak tag", () => {
    expect(formatEntityTag(strong("x"))).toBe('"x"');
    expect(formatEntityTag(weak("x"))).toBe('W/"x"');
  });
});
