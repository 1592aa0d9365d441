import type { PostPageQuery } from "@posts/domain";
import type DataLoader from "dataloader";
import type { PreparedStatement } from "../../connection/prepare.js";
import type { ReadRow } from "../../rows/post-row.js";
import type {
  ListedRow,
  PageBatchRow,
  PageBatchValues,
  PageValues,
  ReadStatements,
} from "./read-statements.js";
import { turnBatches } from "./turn-batches.js";

/** What every row of a page has: its post's id, by which a page is ordered (newest first). */
interface Identified {
  readonly id: number;
}

// As many pages as one turn of the event loop brings at the service's concurrency; a statement
// of more would hold a connection for its whole answer while pages of the next turn wait.
const MAX_BATCH = 64;

/** The two readings of a page, each from a statement sent after it was asked for. */
export interface PageRead {
  /** The page's posts in full. Shared with the callers who asked for the same page at once: read only. */
  inFull(): Promise<readonly ReadRow[]>;
  /** The ids and versions of the page's posts (see `CachedPages`). Shared likewise: read only. */
  listing(): Promise<readonly ListedRow[]>;
}

/**
 * Pages read together: the pages asked for in one turn of the event loop go to the database as
 * one statement per shape (page size, cursor or not, author or not), each distinct page read once
 * however many asked for it, and a lone page by its own statement. A search page is always read
 * alone: its statement is planned for its term.
 *
 * Why: a list request's own statement cost PostgreSQL, and the server's driver, more than the
 * twenty-one index entries it reads; under concurrent requests of the same page (the newest
 * page, above all) one statement now serves them all, and concurrent pages of different authors
 * or cursors share one round trip. Nothing is cached:
 * each page's statement is sent after the page was asked for, so it sees every change committed
 * before then, as a statement of its own would (`turnBatches`, as `PostLookups`).
 */
export class PageReads {
  readonly #reads: ReadStatements;
  // By the statement that reads a batch: one loader per shape.
  readonly #loaders = new Map<unknown, DataLoader<PageValues, readonly unknown[]>>();

  /** Reads pages by `reads`' statements, on the database or through the standby seam they were made with. */
  constructor(reads: ReadStatements) {
    this.#reads = reads;
  }

  /** The readings of the page `query` asks for; each reads when called, not before. */
  page(query: PostPageQuery): PageRead {
    const { values, inFull, listing, batches } = this.#reads.page(query);
    if (batches === undefined) {
      // No statement for several pages (no cursor and no author, when every page of the shape
      // is the same one; or a page size without statements of its own): the same page asked for
      // at once is still read once. A search is read alone.
      const same = query.search === undefined;
      return {
        inFull: () => (same ? this.#together(inFull, undefined, values) : inFull(values)),
        listing: () => (same ? this.#together(listing, undefined, values) : listing(values)),
      };
    }
    return {
      inFull: () => this.#together(inFull, batches.inFull, values),
      listing: () => this.#together(listing, batches.listing, values),
    };
  }

  #together<Row extends Identified>(
    alone: PreparedStatement<PageValues, Row>,
    batch: PreparedStatement<PageBatchValues, PageBatchRow<Row>> | undefined,
    values: PageValues,
  ): Promise<readonly Row[]> {
    let loader = this.#loaders.get(batch ?? alone) as DataLoader<PageValues, readonly Row[]> | undefined;
    if (loader === undefined) {
      loader = turnBatches<PageValues, readonly Row[]>(
        (pages) => readTogether(pages, alone, batch),
        MAX_BATCH,
      );
      this.#loaders.set(batch ?? alone, loader as DataLoader<PageValues, readonly unknown[]>);
    }
    return loader.load(values);
  }
}

/** Which page `values` name within one shape (a bound limit is a value too; see `ReadStatements`). */
const pageKey = (values: PageValues) => `${values.limit}:${values.beforeId}:${values.authorId}`;

/**
 * The rows of each of `pages`, in their order: each distinct page read once, by `batch` when
 * there are several and a batch statement, else each by `alone`.
 */
async function readTogether<Row extends Identified>(
  pages: readonly PageValues[],
  alone: PreparedStatement<PageValues, Row>,
  batch: PreparedStatement<PageBatchValues, PageBatchRow<Row>> | undefined,
): Promise<(readonly Row[])[]> {
  const distinct = new Map<string, number>();
  const values: PageValues[] = [];
  const slots = pages.map((page) => {
    const key = pageKey(page);
    let slot = distinct.get(key);
    if (slot === undefined) {
      slot = values.length;
      distinct.set(key, slot);
      values.push(page);
    }
    return slot;
  });
  const byPage =
    values.length === 1 || batch === undefined
      ? await Promise.all(values.map((v) => alone(v)))
      : await readBatch(values, batch);
  return slots.map((slot) => byPage[slot] as Row[]);
}

/** Each page's rows, newest first, from one statement that read them all. */
async function readBatch<Row extends Identified>(
  values: readonly PageValues[],
  batch: PreparedStatement<PageBatchValues, PageBatchRow<Row>>,
): Promise<Row[][]> {
  const first = values[0] as PageValues;
  const rows = await batch({
    ...(first.beforeId === undefined ? {} : { beforeIds: values.map((v) => v.beforeId as number) }),
    ...(first.authorId === undefined ? {} : { authorIds: values.map((v) => v.authorId as number) }),
  });
  const byPage: PageBatchRow<Row>[][] = values.map(() => []);
  let ordered = true;
  for (const row of rows) {
    const page = byPage[row.page - 1] as PageBatchRow<Row>[];
    const previous = page[page.length - 1];
    if (previous !== undefined && previous.id <= row.id) ordered = false;
    page.push(row);
  }
  // A nested loop answers each page in its own order, newest first; SQL does not promise it
  // without an ORDER BY over the whole answer, which would sort what is sorted already.
  if (!ordered) for (const page of byPage) page.sort((a, b) => b.id - a.id);
  return byPage;
}
