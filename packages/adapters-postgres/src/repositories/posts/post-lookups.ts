import type DataLoader from "dataloader";
import { parseInt8 } from "../../connection/type-parsers.js";
import type { PostRow, ReadRow } from "../../rows/post-row.js";
import type { ReadStatements } from "./read-statements.js";
import { turnBatches } from "./turn-batches.js";

// A turn's lookups go in statements of at most 16, sent together on as many connections.
// PostgreSQL reads them on both cores at once and their answers come back apart, so the service
// answers the first while the others are still read; one statement for the whole turn made the
// service, PostgreSQL and the clients take turns with the whole batch (GET one in a closed loop
// of 32 and 64 connections: bench/RESULTS.md). Statements of 8 cost PostgreSQL more for no more.
const MAX_BATCH = 16;

/**
 * Reads of one post by id, coalesced when they come together: a lookup asked while no other is
 * waiting for its answer goes to the database at once, as the plain lookup by id; the lookups
 * asked while others wait are gathered by turn of the event loop into statements of at most 16
 * (`ReadStatements.byIds`), a lone one as the plain lookup. The plain lookup asks for the post
 * whole when it is small (`ReadStatements.smallById`, the usual answer in one statement), and
 * only when that finds nothing for its outline or its absence (`ReadStatements.findById`).
 *
 * Why: a GET of one post is a statement of its own per request, and PostgreSQL's fixed cost per
 * statement (its round trip, parse of the message, executor start-up and the protocol's own
 * messages on both sides) outweighs the index lookup itself; under concurrent reads one
 * statement serves many. A lookup with no company in sight waits for none: the gathering's own
 * turn and promises are paid only under load, which they pay for.
 * Nothing is cached: each lookup's statement is sent after the lookup was asked for, so it sees
 * every change committed before then, as a statement of its own would.
 *
 * Written with `dataloader`, the usual batching library (`turnBatches`).
 */
export class PostLookups {
  readonly #reads: ReadStatements;
  readonly #loader: DataLoader<number, LookedUp | undefined>;
  /** Lookups asked whose answer has not come: sent alone, or gathered (sent or still waiting for their turn). */
  #outstanding = 0;

  constructor(reads: ReadStatements) {
    this.#reads = reads;
    this.#loader = turnBatches<number, LookedUp | undefined>(async (ids) => {
      try {
        if (ids.length === 1) return [await lookUp(reads, ids[0] as number, (row) => row, rethrow)];
        const rows = await reads.byIds({ ids });
        const byId = new Map<number, ReadRow>();
        for (const row of rows) byId.set(parseInt8(row.id), row);
        return ids.map((id) => byId.get(id));
      } finally {
        this.#outstanding -= ids.length;
      }
    }, MAX_BATCH);
  }

  /** The post's row as of a statement sent after this call, or undefined when there is none. */
  find(id: number): Promise<LookedUp | undefined> {
    const alone = this.#outstanding === 0;
    this.#outstanding += 1;
    if (!alone) return this.#loader.load(id);
    return lookUp(
      this.#reads,
      id,
      (row) => {
        this.#outstanding -= 1;
        return row;
      },
      (error) => {
        this.#outstanding -= 1;
        throw error;
      },
    );
  }

  /** {@link find} for each of `ids`, in their order; fails as a whole when the statement fails. */
  findAll(ids: readonly number[]): Promise<(LookedUp | undefined)[]> {
    // Company for one another: gathered, whatever else waits.
    this.#outstanding += ids.length;
    return Promise.all(ids.map((id) => this.#loader.load(id)));
  }
}

/**
 * A post looked up by id: a {@link PostRow} from `smallById` (a small post, whole), or a
 * {@link ReadRow} from `findById` (an outline, or whole if the post became small meanwhile).
 */
export type LookedUp = PostRow | ReadRow;

/**
 * The plain lookup of `id`, answered through `answered` (or `failed`) in the turn its last
 * statement answers: the small post whole, else its outline, else undefined. The callbacks are
 * given rather than chained by the caller, so that a small post's answer takes one promise turn.
 */
function lookUp<T>(
  reads: ReadStatements,
  id: number,
  answered: (row: LookedUp | undefined) => T,
  failed: (error: unknown) => never,
): Promise<T> {
  return reads
    .smallById({ id })
    .then(
      (rows) =>
        rows.length > 0
          ? answered(rows[0])
          : reads.findById({ id }).then((outlines) => answered(outlines[0]), failed),
      failed,
    );
}

function rethrow(error: unknown): never {
  throw error;
}
