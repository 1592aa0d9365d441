/**
 * A check that failed: what was checked, what the contract expects, and what came back. The
 * runner prints the three; any other error a case throws is printed as an unexpected error.
 */
export class Mismatch extends Error {
  constructor(
    /** What was checked, e.g. `POST /api/v1/posts: status`. */
    readonly what: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`${what}: expected ${expected}, got ${actual}`);
    this.name = "Mismatch";
  }
}
