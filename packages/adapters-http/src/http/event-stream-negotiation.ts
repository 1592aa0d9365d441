import { parse } from "content-type";

const EVENT_STREAM = "text/event-stream";
const JSON_TYPE = "application/json";

/** One media range of an `Accept` header: its type (lower case) and its q-value. */
interface MediaRange {
  readonly type: string;
  readonly q: number;
}

/**
 * The media ranges of an `Accept` header, in order, read by `content-type` (its `comma` mode
 * stops at the comma that ends a range). A q that is not a number in 0–1 (RFC 9110 §12.4.2)
 * leaves its range out rather than guessing what it meant.
 */
function mediaRanges(accept: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  let start = 0;
  while (start < accept.length) {
    let range: ReturnType<typeof parse>;
    try {
      range = parse(accept, { comma: true, start });
    } catch {
      break;
    }
    const q = range.parameters.q === undefined ? 1 : Number(range.parameters.q);
    if (q >= 0 && q <= 1) ranges.push({ type: range.type, q });
    start = range.index + 1;
  }
  return ranges;
}

/**
 * The q-value a header gives `type`: that of the most specific range that matches it
 * (`type/subtype`, then `type/*`, then the range of any type, RFC 9110 §12.5.1), 0 when none
 * does.
 */
function qualityOf(type: string, ranges: readonly MediaRange[]): number {
  const [major] = type.split("/");
  let best: { specificity: number; q: number } = { specificity: -1, q: 0 };
  for (const range of ranges) {
    const specificity =
      range.type === type ? 2 : range.type === `${major}/*` ? 1 : range.type === "*/*" ? 0 : -1;
    if (specificity > best.specificity) best = { specificity, q: range.q };
  }
  return best.q;
}

/**
 * Whether an `Accept` header asks for the change feed as an event stream rather than a JSON
 * page: it names `text/event-stream` itself (a wildcard range, such as a browser's, does not),
 * with a q above 0 and at least as high as the q it gives `application/json`. So
 * `text/event-stream;q=0, application/json` is a JSON page, and a tie is a stream.
 *
 * Negotiator and its wrappers answer which type is preferred but not with what q, and break
 * ties by the order of the header, so the q-values are compared here.
 */
export function acceptsEventStream(accept: string | undefined): boolean {
  if (accept === undefined || !accept.toLowerCase().includes(EVENT_STREAM)) return false;
  const ranges = mediaRanges(accept);
  if (!ranges.some((range) => range.type === EVENT_STREAM)) return false;
  const stream = qualityOf(EVENT_STREAM, ranges);
  return stream > 0 && stream >= qualityOf(JSON_TYPE, ranges);
}
