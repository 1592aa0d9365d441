import { decodeCursor, encodeCursor } from "../cursor.js";
import type { DomainErrorOf, FieldError } from "../errors.js";
import { parseId } from "../ids.js";
import { MESSAGES } from "../messages.js";
import type { SearchPageRead } from "../ports/post-repository.js";
import type { ReadPost } from "../post.js";
import { codePointLength } from "../post-rules.js";
import { err, ok, type Result } from "../result.js";
import type { Dependencies } from "./dependencies.js";

/** Page size when the client names none. */
export const DEFAULT_PAGE_SIZE = 20;
/** Largest page a client may ask for. */
export const MAX_PAGE_SIZE = 100;
/** Longest search text, in Unicode code points. */
export const SEARCH_MAX_CODE_POINTS = 200;

const DIGITS = /^[0-9]+$/;

/** Input of {@link listPosts}, as received: numbers may arrive as digit strings. */
export interface ListPostsQuery {
  readonly size?: unknown;
  readonly cursor?: unknown;
  readonly userId?: unknown;
  /** Search text (see {@link listPosts}); the empty string is the same as none. */
  readonly q?: unknown;
}

/** One page of posts, newest first. */
export interface PostPage {
  /** Whole, or as outlines where the repository answered them (`PostRepository.listPage`). */
  readonly posts: readonly ReadPost[];
  /** The size used. */
  readonly size: number;
  /**
   * Continues after the last post, or where a search page stopped; `null` exactly when no older
   * post follows (for a search: no older match).
   */
  readonly nextCursor: string | null;
}

function readSize(raw: unknown): number | undefined {
  if (raw === undefined) return DEFAULT_PAGE_SIZE;
  const size = typeof raw === "string" && DIGITS.test(raw) ? Number(raw) : raw;
  return Number.isInteger(size) && (size as number) >= 1 && (size as number) <= MAX_PAGE_SIZE
    ? (size as number)
    : undefined;
}

/** The search text of `raw`, `""` for none, or the message of the rule it breaks. */
function readSearch(raw: unknown): { readonly search: string } | { readonly problem: string } {
  if (raw === undefined) return { search: "" };
  if (typeof raw !== "string") return { problem: MESSAGES.searchNotString };
  // A lone surrogate cannot travel to PostgreSQL unchanged, so it could never match as written.
  if (raw.includes("\u0000") || !raw.isWellFormed()) return { problem: MESSAGES.searchInvalidCharacter };
  // UTF-16 length bounds the code point count from above: only long strings need counting.
  if (raw.length > SEARCH_MAX_CODE_POINTS && codePointLength(raw) > SEARCH_MAX_CODE_POINTS) {
    return { problem: MESSAGES.searchTooLong };
  }
  return { search: raw };
}

/**
 * Lists posts newest first (id descending), one keyset page at a time: the cursor names the
 * last post seen, so a page costs the same at any depth and a walk visits every post that
 * existed when it started exactly once, even while posts are being created. `size` is an
 * integer from 1 to 100 (default 20); `userId`, when given (digits, or a non-negative integer
 * number), keeps one author's posts, and one that names nobody (zero, beyond the ids there can
 * be) gives an empty page. `q`, when not empty, keeps the posts whose title or content contains
 * it as a substring, ignoring the case of ASCII letters, every character matching itself (`%`,
 * `_` and `\` are no wildcards): a string of at most 200 code points without U+0000 or a lone
 * surrogate. Filters combine, and search pages are keyset pages like the others, except that a
 * search page's work is bounded (`PostRepository.searchPage`): it may hold fewer than `size`
 * posts, even none, while its `nextCursor` continues the search where it stopped. Pages without
 * `q` are always full while older posts remain. Every invalid parameter is listed in "validation".
 */
export async function listPosts(
  deps: Pick<Dependencies, "posts">,
  query: ListPostsQuery,
): Promise<Result<PostPage, DomainErrorOf<"validation">>> {
  const errors: FieldError[] = [];

  const size = readSize(query.size);
  if (size === undefined) errors.push({ field: "size", message: MESSAGES.sizeInvalid });

  let beforeId: number | undefined;
  if (query.cursor !== undefined) {
    beforeId = typeof query.cursor === "string" ? decodeCursor(query.cursor) : undefined;
    if (beforeId === undefined) errors.push({ field: "cursor", message: MESSAGES.cursorInvalid });
  }

  let authorId: number | undefined;
  let nobody = false;
  if (query.userId !== undefined) {
    const raw = query.userId;
    // A number is judged as a number: String(1e21) is "1e+21", which would read as malformed
    // where the same value in digits names nobody.
    const wellFormed =
      typeof raw === "string"
        ? DIGITS.test(raw)
        : typeof raw === "number" && Number.isInteger(raw) && raw >= 0;
    if (!wellFormed) {
      errors.push({ field: "userId", message: MESSAGES.userIdInvalid });
    } else {
      authorId = parseId(raw);
      // Digits that cannot be an id (zero, beyond 64 bits) name no author: an empty page.
      nobody = authorId === undefined;
    }
  }

  const searched = readSearch(query.q);
  if ("problem" in searched) errors.push({ field: "q", message: searched.problem });

  if (errors.length > 0 || size === undefined || "problem" in searched) {
    return err({ kind: "validation", errors });
  }
  if (nobody) return ok({ posts: [], size, nextCursor: null });

  // One extra row tells whether an older post follows, so there is never a trailing empty page.
  const pageQuery = {
    limit: size + 1,
    ...(beforeId === undefined ? {} : { beforeId }),
    ...(authorId === undefined ? {} : { authorId }),
  };
  const read: SearchPageRead =
    searched.search === ""
      ? { posts: await deps.posts.listPage(pageQuery) }
      : await deps.posts.searchPage({ ...pageQuery, search: searched.search });
  const rows = read.posts;
  const posts = rows.length > size ? rows.slice(0, size) : rows;
  const last = posts.at(-1);
  if (rows.length > size && last !== undefined) return ok({ posts, size, nextCursor: encodeCursor(last.id) });
  // A search that stopped early continues where it stopped: a cursor is only an id to go below.
  const { resumeBelow } = read;
  return ok({ posts, size, nextCursor: resumeBelow === undefined ? null : encodeCursor(resumeBelow) });
}
