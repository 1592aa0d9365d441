import type { SearchPageQuery } from "@posts/domain";

/**
 * Terms remembered for a while: each until `ms` after it was last remembered, at most `most` of
 * them, the oldest forgotten first. A map with an expiry and a bound is a few lines by hand, not
 * a cache library this package would otherwise not need.
 */
export class TermMemory {
  /** Each term with until when it is remembered, oldest first. */
  readonly #until = new Map<string, number>();
  readonly #ms: number;
  readonly #most: number;

  constructor(ms: number, most: number) {
    this.#ms = ms;
    this.#most = most;
  }

  /** Until when `term` is remembered (`Date.now()` time), whether or not that has passed; `undefined` when it is not. */
  until(term: string): number | undefined {
    return this.#until.get(term);
  }

  /** Whether `term` is remembered and its time has not run out (an expired entry goes). */
  holds(term: string): boolean {
    const until = this.#until.get(term);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.#until.delete(term);
    return false;
  }

  /** Remembers `term` from now on, newest last, forgetting the oldest beyond the bound. */
  remember(term: string): void {
    const terms = this.#until;
    terms.delete(term);
    terms.set(term, Date.now() + this.#ms);
    if (terms.size > this.#most) terms.delete(terms.keys().next().value as string);
  }

  /** Forgets `term`. */
  forget(term: string): void {
    this.#until.delete(term);
  }
}

/** What tells a term's pages apart: by author too, as a term rare in one author's posts may be common in everyone's. */
export function termKey(query: SearchPageQuery): string {
  return `${query.authorId ?? ""} ${query.search}`;
}
