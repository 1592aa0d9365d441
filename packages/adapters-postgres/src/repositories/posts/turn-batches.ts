import DataLoader from "dataloader";

/**
 * A `dataloader` that gathers the keys asked for in one turn of the event loop into one call of
 * `load`, at most `maxBatchSize` at a time, caching nothing: each call of the loader's `load` is
 * answered from a batch sent after it was made.
 *
 * DataLoader's own schedule would batch only the keys of one callback, and each request arrives
 * in a callback of its own, so the batch is scheduled with `setImmediate`: after every I/O
 * callback of the loop's current turn.
 */
export function turnBatches<K, V>(
  load: (keys: readonly K[]) => Promise<readonly (V | Error)[]>,
  maxBatchSize: number,
): DataLoader<K, V> {
  return new DataLoader<K, V>(load, {
    cache: false,
    maxBatchSize,
    batchScheduleFn: (callback) => setImmediate(callback),
  });
}

/** What a batch answers for a key whose work failed: DataLoader fails a load whose answer is an Error, and only then. */
export function loadError(failure: unknown): Error {
  return failure instanceof Error ? failure : new Error(String(failure));
}
