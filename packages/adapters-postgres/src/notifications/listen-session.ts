import pg from "pg";

const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5000;

/** Where a {@link ListenSession} connects, and who hears of its failures. */
export interface ListenSessionOptions {
  readonly connectionString: string;
  readonly applicationName: string;
  /** Told of each failure of the session's connection, for the logs. */
  readonly onError?: (error: Error) => void;
}

/** What a user of a {@link ListenSession} does at each of its openings. */
export interface SessionUse {
  /** Runs on each new connection before the session hands it out; a failure fails that opening. */
  readonly setUp?: (client: pg.Client) => Promise<void>;
  /**
   * The session has a new connection; `reopened`: since an earlier one, whose state (a `LISTEN`,
   * a prepared statement) is gone with it.
   */
  readonly opened?: (reopened: boolean) => void;
  /**
   * Whether this user set up something that a lost connection took with it: an opening asked for
   * by another user then counts as a reopening.
   */
  readonly holdsState?: () => boolean;
}

/**
 * One connection of its own, outside the pool (a pooled connection would carry a session's
 * state, its `LISTEN`s and prepared statements, to whoever borrows it next), opened on demand and
 * reopened with backoff whenever it fails. The notifications and the primary-position
 * statement of the standby reads share it (`postgresNotifications`, `positionSession`).
 */
export class ListenSession {
  readonly #options: ListenSessionOptions;
  readonly #uses: SessionUse[] = [];
  #client: pg.Client | undefined;
  #connecting: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryMs = RETRY_FIRST_MS;
  #closed = false;

  constructor(options: ListenSessionOptions) {
    this.#options = options;
  }

  /** Adds a user, whose `setUp` runs on every connection opened from now on. */
  use(use: SessionUse): void {
    this.#uses.push(use);
  }

  /** The open connection, if any. */
  get client(): pg.Client | undefined {
    return this.#client;
  }

  /** Opens the connection unless it is open, opening, or waiting to reopen. */
  openSoon(): void {
    if (
      this.#closed ||
      this.#client !== undefined ||
      this.#connecting !== undefined ||
      this.#retryTimer !== undefined
    )
      return;
    const reopened = this.#uses.some((use) => use.holdsState?.() === true);
    const opening = this.#connect(reopened).catch((error: Error) => {
      this.#options.onError?.(error);
      this.#reconnectLater();
    });
    this.#connecting = opening;
    void opening.finally(() => {
      if (this.#connecting === opening) this.#connecting = undefined;
    });
  }

  /**
   * Waits for an opening under way, then opens the connection unless it is open or waiting to
   * reopen. Answers the connection that was open already, on which the caller sets up what it
   * has added since; `undefined` when it opened one now (every `setUp` ran on it) or could not
   * (the first failure is reported as a lost connection's would be, and a reopening follows).
   */
  async openNow(): Promise<pg.Client | undefined> {
    if (this.#connecting !== undefined) await this.#connecting.catch(() => {});
    if (this.#client !== undefined || this.#retryTimer !== undefined) return this.#client;
    this.#connecting = this.#connect(false);
    try {
      await this.#connecting;
    } catch (error) {
      this.#options.onError?.(error as Error);
      this.#reconnectLater();
    } finally {
      this.#connecting = undefined;
    }
    return undefined;
  }

  /** Drops `which` if it is still the session's connection, and reopens later. */
  fail(which: pg.Client, error: Error): void {
    if (this.#client !== which) return;
    this.#client = undefined;
    which.removeAllListeners("end");
    which.on("error", () => {});
    which.end().catch(() => {});
    if (this.#closed) return;
    this.#options.onError?.(error);
    this.#reconnectLater();
  }

  /** Ends the connection; the session opens none after this. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    await this.#connecting?.catch(() => {});
    const last = this.#client;
    this.#client = undefined;
    if (last !== undefined) {
      last.removeAllListeners("end");
      last.on("error", () => {});
      await last.end().catch(() => {});
    }
  }

  async #connect(reopened: boolean): Promise<void> {
    const next = new pg.Client({
      connectionString: this.#options.connectionString,
      application_name: this.#options.applicationName,
      keepAlive: true,
    });
    next.on("error", (error) => this.fail(next, error));
    next.on("end", () => this.fail(next, new Error("the listening connection ended")));
    try {
      await next.connect();
      for (const use of this.#uses) await use.setUp?.(next);
    } catch (error) {
      next.removeAllListeners("end");
      next.on("error", () => {});
      await next.end().catch(() => {});
      throw error;
    }
    if (this.#closed) {
      await next.end().catch(() => {});
      return;
    }
    this.#client = next;
    this.#retryMs = RETRY_FIRST_MS;
    for (const use of this.#uses) use.opened?.(reopened);
  }

  #reconnectLater(): void {
    if (this.#closed || this.#retryTimer !== undefined) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      const connecting = this.#connect(true).catch((error: Error) => {
        this.#options.onError?.(error);
        this.#retryMs = Math.min(RETRY_MAX_MS, this.#retryMs * 2);
        this.#reconnectLater();
      });
      this.#connecting = connecting;
      connecting.finally(() => {
        this.#connecting = undefined;
      });
    }, this.#retryMs);
    this.#retryTimer.unref();
  }
}
