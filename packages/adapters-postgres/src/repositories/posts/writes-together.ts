import { isDatabaseUnavailable } from "../../connection/is-database-unavailable.js";
import { loadError, turnBatches } from "./turn-batches.js";

// As many writes as one turn of the event loop brings at the service's concurrency; more wait
// for the next statement rather than make one statement's arrays, and its WAL, unbounded.
const MAX_WRITE_BATCH = 64;
// A content longer than this (in UTF-16 units) is written by a statement of its own: its write
// outweighs a statement's fixed cost anyway, and a batch of the longest contents the API takes
// would be one statement of a hundred megabytes.
const MAX_BATCHED_CONTENT = 16_384;

/** How {@link writesTogether} writes: one write alone, and several in one statement. */
export interface WritesTogether<K, V> {
  /** One write, in a statement of its own. */
  readonly alone: (key: K) => Promise<V>;
  /** Several writes, answered in the order of `keys`; a failure fails them all, and nothing of them is written. */
  readonly together: (keys: readonly K[]) => Promise<readonly (V | Error)[]>;
  /** The new content a write carries, if any: a long one is always written alone. */
  readonly contentOf: (key: K) => string | null;
}

/**
 * The writes asked for in one turn of the event loop, as one statement (`together`), a lone one
 * or one with a long content `alone`. When the statement fails for any reason but an unavailable
 * database (a row PostgreSQL refuses, an author deleted meanwhile, a deadlock), each write of it
 * is tried again alone, so that one cannot fail another; when the database is unavailable, they
 * all fail, as each would alone.
 */
export function writesTogether<K, V>(writes: WritesTogether<K, V>): (key: K) => Promise<V> {
  const { alone, together, contentOf } = writes;
  const loader = turnBatches<K, V>(async (keys) => {
    if (keys.length === 1) return [await alone(keys[0] as K)];
    try {
      return await together(keys);
    } catch (error) {
      if (isDatabaseUnavailable(error)) throw error;
      return Promise.all(keys.map((key) => alone(key).catch(loadError)));
    }
  }, MAX_WRITE_BATCH);
  return (key) => ((contentOf(key)?.length ?? 0) > MAX_BATCHED_CONTENT ? alone(key) : loader.load(key));
}
