import type { FieldError } from "./errors.js";
import { MESSAGES } from "./messages.js";

/** Longest title, in Unicode code points (what PostgreSQL's varchar(255) counts). */
export const TITLE_MAX_CODE_POINTS = 255;

// JavaScript's \s misses U+0085 (NEXT LINE), which Unicode counts as white space.
const BLANK = /^[\s\p{White_Space}]*$/u;

interface FieldMessages {
  readonly required: string;
  readonly notString: string;
  readonly invalidCharacter: string;
}

const TITLE: FieldMessages = {
  required: MESSAGES.titleRequired,
  notString: MESSAGES.titleNotString,
  invalidCharacter: MESSAGES.titleInvalidCharacter,
};
const CONTENT: FieldMessages = {
  required: MESSAGES.contentRequired,
  notString: MESSAGES.contentNotString,
  invalidCharacter: MESSAGES.contentInvalidCharacter,
};

/** Counts code points without allocating, so a 16 MiB string costs one pass and no copy. */
export function codePointLength(value: string): number {
  let count = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    // A high surrogate followed by a low one is a single code point.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

function checkText(value: unknown, messages: FieldMessages): string | undefined {
  if (value === undefined || value === null) return messages.required;
  if (typeof value !== "string") return messages.notString;
  if (BLANK.test(value)) return messages.required;
  // PostgreSQL cannot store U+0000, and a lone surrogate would come back as U+FFFD.
  if (value.includes("\u0000") || !value.isWellFormed()) return messages.invalidCharacter;
  return undefined;
}

/**
 * Checks a title: a string, not blank by Unicode white space, at most 255 code points,
 * with no U+0000 and no lone surrogate. Answers the message of the first rule broken, or
 * `undefined` when the title is valid.
 */
export function checkTitle(value: unknown): string | undefined {
  const problem = checkText(value, TITLE);
  if (problem !== undefined) return problem;
  const title = value as string;
  // UTF-16 length bounds the code point count from above: only long strings need counting.
  if (title.length > TITLE_MAX_CODE_POINTS && codePointLength(title) > TITLE_MAX_CODE_POINTS) {
    return MESSAGES.titleTooLong;
  }
  return undefined;
}

/**
 * Checks a content body: a string, not blank by Unicode white space, with no U+0000 and no
 * lone surrogate. Length is bounded only by the transport. Answers the message of the first
 * rule broken, or `undefined` when the content is valid.
 */
export function checkContent(value: unknown): string | undefined {
  return checkText(value, CONTENT);
}

/** A validated title and content, ready to store exactly as sent (never trimmed). */
export interface PostText {
  readonly title: string;
  readonly content: string;
}

/**
 * Validates both fields of a new post and lists every failing one, title first.
 * Answers the valid text, or the field errors.
 */
export function validatePostText(
  title: unknown,
  content: unknown,
): { readonly text: PostText } | { readonly errors: readonly FieldError[] } {
  const errors: FieldError[] = [];
  const titleProblem = checkTitle(title);
  if (titleProblem !== undefined) errors.push({ field: "title", message: titleProblem });
  const contentProblem = checkContent(content);
  if (contentProblem !== undefined) errors.push({ field: "content", message: contentProblem });
  if (errors.length > 0) return { errors };
  return { text: { title: title as string, content: content as string } };
}
