import { encodeCursor } from "@posts/domain";
import type pg from "pg";
import type { SearchPageTiming, TimeTo20 } from "../measure/report.js";
import { CLUSTERED_TERMS, SEARCH_TERMS } from "./database.js";

/** A search term, the class its latencies are reported under, and the author it is limited to, if any. */
export interface SearchTerm {
  readonly term: string;
  readonly kind: string;
  readonly userId?: number;
}

/** How many posts the frequency of a drawn term is estimated on. */
const SAMPLE_POSTS = 2000;
/** How many substrings of random posts are drawn. */
const DRAWN_TERMS = 300;
/** Pages followed after the first, per term. */
const NEXT_PAGES = 4;

const foldAscii = (text: string) => text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());

/** An integer in [0, n). */
const below = (n: number) => Math.floor(Math.random() * n);

/** The class of a drawn term by how many of the sampled posts contain it. */
function frequencyClass(share: number, length: number): string {
  const size = length < 3 ? "1–2 chars" : "≥3 chars";
  if (share >= 0.1) return `drawn, in ≥10 % (${size})`;
  if (share >= 0.01) return `drawn, in 1–10 % (${size})`;
  if (share > 0) return `drawn, in <1 % (${size})`;
  return `drawn, not in the sample (${size})`;
}

/**
 * The search terms of the search-only bench: a few hundred substrings of random posts (from the
 * title or the content, 1 to 16 characters), each classed by its share of a random sample of
 * posts (what every frequency and spread the data holds looks like), and the planted terms:
 * in every post, rare and spread, Korean, only in the oldest posts (a title-only Korean term
 * and a content-only ASCII one), and digit runs of the seed's numbering, which cluster (the
 * titles "Post number 123…" of ids starting 123 lie in a few runs, mostly old).
 */
export async function searchPopulation(client: pg.Client, posts: number): Promise<SearchTerm[]> {
  const ids = Array.from({ length: SAMPLE_POSTS }, () => 1 + below(posts));
  const { rows } = await client.query<{ title: string; content: string }>(
    "select title, content from posts where id = any($1::int8[])",
    [ids],
  );
  const sample = rows.map((row) => foldAscii(`${row.title}\u0000${row.content}`));
  const terms: SearchTerm[] = [];
  const seen = new Set<string>();
  for (let attempts = 0; terms.length < DRAWN_TERMS && attempts < DRAWN_TERMS * 10; attempts++) {
    const row = rows[below(rows.length)];
    if (row === undefined) break;
    const text = Math.random() < 0.4 ? row.title : row.content;
    const chars = [...text];
    const length = 1 + below(Math.min(16, chars.length));
    const start = below(chars.length - length + 1);
    const term = chars.slice(start, start + length).join("");
    if (term.trim() === "" || seen.has(term)) continue;
    seen.add(term);
    const folded = foldAscii(term);
    const share = sample.filter((each) => each.includes(folded)).length / sample.length;
    terms.push({ term, kind: frequencyClass(share, length) });
  }
  const planted: [string, string][] = [
    [SEARCH_TERMS.common, "planted, in every post"],
    [SEARCH_TERMS.common.toUpperCase(), "planted, in every post"],
    [SEARCH_TERMS.rare, "planted, rare and spread (titles)"],
    [SEARCH_TERMS.korean, "planted, Korean in 5 % (contents)"],
    [SEARCH_TERMS.oldKorean, "planted, only the oldest 0.1 % (titles, Korean)"],
    [SEARCH_TERMS.oldAscii, "planted, only the oldest 1 % (contents, ASCII)"],
    [SEARCH_TERMS.oldAscii.toLowerCase(), "planted, only the oldest 1 % (contents, ASCII)"],
    ["no such term anywhere", "absent"],
    ["없는 말", "absent"],
    // Words of every post in an order none has: the trigram indexes read all their posting lists.
    ["amet dolor", "absent, its trigrams in every post"],
    ["ipsum lorem sit", "absent, its trigrams in every post"],
  ];
  for (const [term, kind] of planted) terms.push({ term, kind });
  for (const { term, kind } of CLUSTERED_TERMS) terms.push({ term, kind });
  // The clustered words' case folded, and their letters and pairs that the rest of the seed never holds.
  terms.push({ term: "SPHINX", kind: "clustered, 20 % in ids 0–20 % (titles)" });
  terms.push({ term: "z", kind: "clustered, 11 % in ids 8–19 % (1–2 chars)" });
  terms.push({ term: "j", kind: "clustered, 0.01 % at 15 % (1–2 chars)" });
  terms.push({ term: "q", kind: "planted, rare and spread (1–2 chars)" });
  terms.push({ term: "qu", kind: "planted, rare and spread (1–2 chars)" });
  // Limited to one author: the posts are dealt to the users in turn, so user 1 wrote one post in
  // `users` of every class, and a user past the last wrote none.
  terms.push({ term: SEARCH_TERMS.common, kind: "one author, in every post", userId: 1 });
  terms.push({ term: "waltz", kind: "one author, clustered 11 %", userId: 1 });
  terms.push({ term: SEARCH_TERMS.rare, kind: "one author, rare and spread", userId: 1 });
  // Digit runs: the posts whose number starts with them lie in clusters, the longest old.
  for (let i = 0; i < 30; i++) {
    const digits = String(1 + below(posts)).slice(0, 3 + below(3));
    const where = i % 2 === 0 ? `number ${digits}` : `. ${digits}`;
    terms.push({ term: where, kind: `clustered digits (${i % 2 === 0 ? "titles" : "contents"})` });
  }
  return terms;
}

/**
 * Reads the search pages of `terms` from the service at `baseUrl`, `concurrency` requests at a
 * time: each term's first page, up to four more following nextCursor, and one page below a
 * random post (a cursor deep in the table), all of `size` 20. Answers each page's latency.
 */
export async function measureSearchPages(
  baseUrl: string,
  terms: readonly SearchTerm[],
  posts: number,
  concurrency: number,
): Promise<SearchPageTiming[]> {
  const timings: SearchPageTiming[] = [];
  const get = async (search: SearchTerm, page: SearchPageTiming["page"], cursor?: string) => {
    const answer = await searchPage(baseUrl, search, cursor);
    timings.push({ kind: search.kind, page, ms: answer.ms, posts: answer.posts, status: answer.status });
    return answer.nextCursor;
  };
  const queue = [...terms];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
        let cursor = await get(next, "first");
        for (let i = 0; i < NEXT_PAGES && cursor !== null; i++) {
          cursor = await get(next, "next", cursor);
        }
        await get(next, "deep", encodeCursor(1 + below(posts)));
      }
    }),
  );
  return timings;
}

/** One search page of 20 as a client asks for it: its latency, status, posts and next cursor. */
async function searchPage(
  baseUrl: string,
  search: SearchTerm,
  cursor: string | undefined,
): Promise<{ ms: number; status: number; posts: number; nextCursor: string | null }> {
  const query = new URLSearchParams({
    size: "20",
    q: search.term,
    ...(search.userId === undefined ? {} : { userId: String(search.userId) }),
    ...(cursor === undefined ? {} : { cursor }),
  });
  const started = performance.now();
  const response = await fetch(`${baseUrl}/api/v1/posts?${query}`);
  const body = (await response.json()) as { content?: unknown[]; nextCursor?: string | null };
  const ms = performance.now() - started;
  return {
    ms,
    status: response.status,
    posts: body.content?.length ?? 0,
    nextCursor: body.nextCursor ?? null,
  };
}

/** The matches a user waits for: the first page's worth. */
const WANTED_MATCHES = 20;
/** Pages followed at most per term, where a term that needs more has long failed its target anyway. */
const MOST_PAGES_FOLLOWED = 400;
/** Time spent at most per term, for the same reason. */
const MOST_MS_PER_TERM = 30_000;
/** Drawn terms of each class followed to twenty matches (the planted and clustered ones all are). */
const DRAWN_PER_CLASS = 8;

/**
 * How long each term takes to its first twenty matches or to the definite end (no `nextCursor`),
 * following `nextCursor` page by page as a search box does, one term at a time: pages, total
 * milliseconds, and the first and slowest later page. Every planted and clustered term, and up to
 * eight drawn terms of each class. A term is given up after 400 pages or 30 s, which it records.
 */
export async function measureTimeTo20(baseUrl: string, terms: readonly SearchTerm[]): Promise<TimeTo20[]> {
  const drawnOfClass = new Map<string, number>();
  const chosen = terms.filter((each) => {
    if (!each.kind.startsWith("drawn")) return true;
    const taken = drawnOfClass.get(each.kind) ?? 0;
    drawnOfClass.set(each.kind, taken + 1);
    return taken < DRAWN_PER_CLASS;
  });
  const results: TimeTo20[] = [];
  for (const search of chosen) {
    const started = performance.now();
    let matches = 0;
    let pages = 0;
    let firstMs = 0;
    let slowestLaterMs = 0;
    let cursor: string | undefined;
    let status = 200;
    let ended = false;
    while (
      matches < WANTED_MATCHES &&
      pages < MOST_PAGES_FOLLOWED &&
      performance.now() - started < MOST_MS_PER_TERM
    ) {
      const answer = await searchPage(baseUrl, search, cursor);
      pages += 1;
      if (pages === 1) firstMs = answer.ms;
      else slowestLaterMs = Math.max(slowestLaterMs, answer.ms);
      status = answer.status;
      if (answer.status !== 200) break;
      matches += answer.posts;
      if (answer.nextCursor === null) {
        ended = true;
        break;
      }
      cursor = answer.nextCursor;
    }
    const ms = performance.now() - started;
    const gaveUp = status === 200 && !ended && matches < WANTED_MATCHES;
    results.push({
      kind: search.kind,
      term: search.term,
      pages,
      ms,
      matches,
      firstMs,
      slowestLaterMs,
      status,
      gaveUp,
    });
  }
  return results;
}
