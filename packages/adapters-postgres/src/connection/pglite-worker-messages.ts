/**
 * The messages between {@link PgliteInWorker} (the thread that answers requests) and
 * `pglite-worker.js` (the thread that owns PGlite). Types only: both sides are this package's.
 */

/** What the worker is started with (`workerData`). */
export interface WorkerStart {
  readonly dataDir: string | undefined;
  /** A data directory tarball to start from, transferred rather than copied. */
  readonly loadDataDir: ArrayBuffer | undefined;
}

/** A request to the worker; `id` names its one answer. */
export type WorkerRequest =
  | { readonly kind: "query"; readonly id: number; readonly sql: string; readonly params: unknown[] }
  | { readonly kind: "listen"; readonly id: number; readonly channel: string }
  | { readonly kind: "unlisten"; readonly id: number; readonly subscription: number }
  | { readonly kind: "close"; readonly id: number };

/** An error's message and PostgreSQL's fields (`code`, `detail`, `constraint`…), as plain values. */
export type ErrorFields = { readonly message: string } & Readonly<Record<string, string | number | boolean>>;

/** What the worker sends back. */
export type WorkerReply =
  | { readonly kind: "ready" }
  | { readonly kind: "failed"; readonly error: ErrorFields }
  | {
      readonly kind: "result";
      readonly id: number;
      readonly rows: unknown[];
      readonly affectedRows: number | undefined;
      readonly fields: { name: string; dataTypeID: number }[];
    }
  | { readonly kind: "error"; readonly id: number; readonly error: ErrorFields }
  /** A `NOTIFY` on the channel of the `listen` request whose id is `subscription`. */
  | { readonly kind: "notification"; readonly subscription: number; readonly payload: string };
