import type { Clock } from "@posts/domain";
import type { Logger } from "pino";

/** Rows that expire, and how to delete the expired ones. */
export interface ExpirySweep {
  /** What it deletes, for the log (e.g. "attempt counts"). */
  readonly name: string;
  /** Deletes what has expired at `now`; answers how many rows it deleted. */
  deleteExpired(now: Date): Promise<number>;
}

/** Options of {@link startExpirySweeper}. */
export interface ExpirySweeperOptions {
  /** Run in this order at every interval; one that fails does not stop the next. */
  readonly sweeps: readonly ExpirySweep[];
  readonly clock: Clock;
  readonly logger: Pick<Logger, "debug" | "error">;
  /** Milliseconds between two runs. Default 60 000. */
  readonly intervalMs?: number;
}

/** A running sweeper. */
export interface ExpirySweeper {
  /** Stops the timer and resolves once a run under way has ended. Idempotent. */
  stop(): Promise<void>;
}

/** Every minute: often enough that the expired rows of a minute of attacks stay few. */
export const DEFAULT_SWEEP_INTERVAL_MS = 60_000;

/**
 * Deletes expired rows every `intervalMs` (the first run one interval after the start), so that
 * tables of things that expire (throttle counts, and whatever is added to the list) do not grow
 * without bound. A failure is logged and the next interval tries again: a database that is away
 * for a while costs nothing but log lines. A run that lasts longer than the interval is not
 * overlapped by the next. The timer does not keep the process alive; stop it at shutdown, before
 * the database closes. Several instances sweeping the same tables is harmless: what one deletes,
 * the others find gone.
 */
export function startExpirySweeper(options: ExpirySweeperOptions): ExpirySweeper {
  const { sweeps, clock, logger } = options;
  let running: Promise<void> | undefined;

  const run = async () => {
    for (const sweep of sweeps) {
      try {
        const deleted = await sweep.deleteExpired(clock.now());
        if (deleted > 0)
          logger.debug({ sweep: sweep.name, deleted }, `deleted ${deleted} expired ${sweep.name}`);
      } catch (error) {
        logger.error({ err: error, sweep: sweep.name }, `deleting expired ${sweep.name} failed`);
      }
    }
  };

  const timer = setInterval(() => {
    if (running !== undefined) return;
    running = run().finally(() => {
      running = undefined;
    });
  }, options.intervalMs ?? DEFAULT_SWEEP_INTERVAL_MS);
  timer.unref();

  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
