// Leading zeros are allowed ("007" is 7) and do not count towards the length bound.
const DIGITS = /^0*([0-9]{1,16})$/;

/**
 * Reads an identifier given as text or as a number. Answers `undefined` for anything that
 * cannot name a stored row: not digits, zero, or beyond `Number.MAX_SAFE_INTEGER` (which
 * includes everything beyond a signed 64-bit integer). Callers treat `undefined` as "no such
 * row" without asking a repository, so a huge id is a 404 and never a database error.
 */
export function parseId(raw: unknown): number | undefined {
  let id: number;
  if (typeof raw === "number") {
    id = raw;
  } else if (typeof raw === "string") {
    // Sixteen significant digits bound Number() to exact values; anything longer is over 2^53.
    const significant = DIGITS.exec(raw)?.[1];
    if (significant === undefined) return undefined;
    id = Number(significant);
  } else {
    return undefined;
  }
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}
