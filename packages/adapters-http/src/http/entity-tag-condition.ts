/** One entity-tag of an `If-Match` or `If-None-Match` list (RFC 9110 §8.8.3). */
export interface EntityTag {
  /** Whether it carried the `W/` prefix. */
  readonly weak: boolean;
  /** The opaque-tag without its double quotes. */
  readonly opaque: string;
}

/**
 * An `If-Match` or `If-None-Match` value: `"*"` (any current representation), or the list of
 * entity-tags it names. A malformed value is the empty list: it names nothing, so it matches
 * nothing (docs/conditional-requests.md#change-safely-if-match--412).
 */
export type EntityTagCondition = "*" | readonly EntityTag[];

const NOTHING: readonly EntityTag[] = [];
const COMMA = 0x2c;
const SPACE = 0x20;
const TAB = 0x09;
// entity-tag = [ weak ] opaque-tag; weak = %s"W/" (case-sensitive); opaque-tag = DQUOTE *etagc DQUOTE;
// etagc = %x21 / %x23-7E / obs-text. Node reads header bytes as latin1, so obs-text is U+0080–U+00FF.
const ENTITY_TAG = /(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"/y;

/**
 * Parses an `If-Match` or `If-None-Match` header exactly as RFC 9110 sections 13.1.1 and 13.1.2 write it:
 * `*`, or a comma-separated list of entity-tags with optional whitespace around the commas and
 * empty elements allowed (the #rule, RFC 9110 §5.6.1). A header sent twice arrives joined by ", " (Node
 * does that for these names, and an array is joined the same way), which is the combined list
 * RFC 9110 §5.3 prescribes. `undefined` when the header is absent.
 *
 * Written here rather than taken from a library: `fresh` (behind Express's and @fastify/etag's
 * 304s) splits on every comma, even one inside an opaque-tag (`%x2C` is a valid etagc), accepts
 * anything between the commas, and has no If-Match at all; @fastify/etag generates tags and
 * uses the same loose comparison. A precondition that guards a write must not match by
 * accident, so malformed values are refused whole here.
 */
export function parseEntityTagCondition(
  header: string | readonly string[] | undefined,
): EntityTagCondition | undefined {
  if (header === undefined) return undefined;
  const value = typeof header === "string" ? header : header.join(", ");
  const start = skipWhitespace(value, 0);
  let end = value.length;
  while (end > start && isWhitespace(value.charCodeAt(end - 1))) end--;
  if (end - start === 1 && value.charCodeAt(start) === 0x2a) return "*";

  const tags: EntityTag[] = [];
  let position = start;
  for (;;) {
    position = skipWhitespace(value, position);
    if (position >= end) return tags;
    // An empty element, or the comma after a tag.
    if (value.charCodeAt(position) === COMMA) {
      position++;
      continue;
    }
    ENTITY_TAG.lastIndex = position;
    const match = ENTITY_TAG.exec(value);
    if (match === null) return NOTHING;
    tags.push({ weak: match[1] !== undefined, opaque: match[2] ?? "" });
    position = skipWhitespace(value, ENTITY_TAG.lastIndex);
    if (position < end && value.charCodeAt(position) !== COMMA) return NOTHING;
  }
}

/**
 * The weak comparison of RFC 9110 §8.8.3.2, as `If-None-Match` uses it: whether `condition`
 * is `*` or names `tag`, a `W/` prefix on either side ignored.
 */
export function matchesWeakly(condition: EntityTagCondition, tag: EntityTag): boolean {
  return condition === "*" || condition.some((listed) => listed.opaque === tag.opaque);
}

/** The header form of `tag`: `"opaque"`, or `W/"opaque"` when weak. */
export function formatEntityTag(tag: EntityTag): string {
  return tag.weak ? `W/"${tag.opaque}"` : `"${tag.opaque}"`;
}

function isWhitespace(code: number): boolean {
  return code === SPACE || code === TAB;
}

function skipWhitespace(value: string, from: number): number {
  let position = from;
  while (position < value.length && isWhitespace(value.charCodeAt(position))) position++;
  return position;
}
