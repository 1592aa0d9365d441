/**
 * Names for the statements `prepare()` compiled, under which the `pg` pool runs them as named
 * prepared statements: PostgreSQL then parses each one once per connection instead of at every
 * execution, and its plan cache keeps a generic plan where one serves every value as well as a
 * plan made for the values (as for reading one post by id). A name always means one text (`pg`
 * refuses a name reused for another text, and a connection keeps what it prepared); a text
 * nobody registered (migrations, the readiness check, DDL, a transaction's BEGIN and COMMIT) has
 * no name and runs unnamed.
 */
export class StatementNames {
  readonly #names = new Map<string, string>();
  #issued = 0;

  /** Gives `text` a name, unless it has one already. */
  register(text: string): void {
    if (!this.#names.has(text)) this.#names.set(text, this.#next());
  }

  /** The name `text` runs under, or `undefined` for a text never registered. */
  nameOf(text: string): string | undefined {
    return this.#names.get(text);
  }

  /**
   * The name `text` runs under from now on, after the statement prepared as `stale` stopped
   * fitting the schema (SQLSTATE 0A000, "cached plan must not change result type"). A fresh
   * name, because each connection remembers the names it prepared and would otherwise go on
   * sending the old statement; every connection prepares the new one on its next use. A caller
   * that saw the failure after another one renewed the name gets that newer name, not a third.
   */
  renew(text: string, stale: string): string {
    const current = this.#names.get(text);
    if (current !== undefined && current !== stale) return current;
    const fresh = this.#next();
    this.#names.set(text, fresh);
    return fresh;
  }

  #next(): string {
    this.#issued += 1;
    return `posts_${this.#issued}`;
  }
}

/**
 * The names of this process: `prepare()` registers every statement it compiles here, and the
 * pools of `createPostgresDatabase` look them up. One registry for the process, because a name
 * only has to be unique on a connection and every connection belongs to one process.
 */
export const PREPARED_STATEMENT_NAMES = new StatementNames();
