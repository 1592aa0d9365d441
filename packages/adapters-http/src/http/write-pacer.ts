import { Readable, type Writable } from "node:stream";

/**
 * The most bytes handed to a socket in one write by a paced writer. Writing to a socket, libuv
 * copies into the kernel at once as much as it takes, several megabytes on loopback: a 10 MB
 * event written whole to two hundred streams is a turn of the event loop spent copying gigabytes,
 * during which no other request (a health check) is read.
 */
export const WRITE_SLICE_BYTES = 64 * 1024;
/**
 * The most bytes all paced writers of the process hand to sockets in one turn of the event loop,
 * in slices: copying this much takes a few milliseconds, after which the loop reads what else
 * came in before the next slices are written.
 */
export const TURN_BYTES = 2 * 1024 * 1024;

const waiting: (() => void)[] = [];
let scheduled = false;

function schedule(): void {
  if (scheduled || waiting.length === 0) return;
  scheduled = true;
  setImmediate(grantTurn);
}

// Run in the check phase of a turn: the writers granted write there (their promises settle as
// microtasks right after it), and those that ask again are granted in a later turn, after the
// loop has polled for I/O.
function grantTurn(): void {
  scheduled = false;
  for (let budget = TURN_BYTES; budget > 0 && waiting.length > 0; budget -= WRITE_SLICE_BYTES) {
    (waiting.shift() as () => void)();
  }
  schedule();
}

/**
 * Resolves, in a later turn of the event loop, when the caller may write one slice of at most
 * {@link WRITE_SLICE_BYTES}: writers are granted in the order they asked, at most
 * {@link TURN_BYTES} of slices a turn for the whole process, since the event loop is the
 * process's. A writer asks once per slice.
 */
export function writeTurn(): Promise<void> {
  return new Promise<void>((resolve) => {
    waiting.push(resolve);
    schedule();
  });
}

/** The slices of {@link writeSlices}, made as the chunks come: from a generator or a stream alike. */
class SliceGroups {
  #group: Buffer[] = [];
  #bytes = 0;

  /** The slices that `chunk` fills, in order; what is left of it waits for the next chunk. */
  *add(chunk: Buffer): Generator<readonly Buffer[]> {
    for (let start = 0; start < chunk.length; ) {
      const end = Math.min(chunk.length, start + WRITE_SLICE_BYTES - this.#bytes);
      this.#group.push(start === 0 && end === chunk.length ? chunk : chunk.subarray(start, end));
      this.#bytes += end - start;
      start = end;
      if (this.#bytes >= WRITE_SLICE_BYTES) {
        yield this.#group;
        this.#group = [];
        this.#bytes = 0;
      }
    }
  }

  /** The last slice, shorter than the others, once no chunk follows. */
  *rest(): Generator<readonly Buffer[]> {
    if (this.#group.length > 0) yield this.#group;
    this.#group = [];
    this.#bytes = 0;
  }
}

/**
 * `chunks` cut into slices of at most {@link WRITE_SLICE_BYTES}: a chunk larger than that comes
 * as views of its bytes (never a copy), smaller ones come together, as many as fit.
 */
export function* writeSlices(chunks: Iterable<Buffer>): Generator<readonly Buffer[]> {
  const groups = new SliceGroups();
  for (const chunk of chunks) yield* groups.add(chunk);
  yield* groups.rest();
}

/**
 * `chunks` as a readable stream of slices ({@link writeSlices}), each read in a turn
 * {@link writeTurn} grants and only once the one before was taken: for an answer of megabytes
 * sent by the framework (piped to the response), which then never copies more than a slice at a
 * time into the socket. `chunks` may be asynchronous (a page whose large posts are read as it is
 * written): each is asked for only once the slices before it were taken, and the stream's
 * destruction ends it (`return`), as `Readable.from` ends what it reads.
 */
export function pacedReadable(chunks: Iterable<Buffer> | AsyncIterable<Buffer>): Readable {
  async function* paced(): AsyncGenerator<Buffer> {
    const groups = new SliceGroups();
    const joined = (slice: readonly Buffer[]) =>
      slice.length === 1 ? (slice[0] as Buffer) : Buffer.concat(slice);
    for await (const chunk of chunks) {
      for (const slice of groups.add(chunk)) {
        await writeTurn();
        yield joined(slice);
      }
    }
    for (const slice of groups.rest()) {
      await writeTurn();
      yield joined(slice);
    }
  }
  return Readable.from(paced(), { objectMode: false, highWaterMark: 1 });
}

/**
 * Writes `chunks` to `target` a slice at a time ({@link writeSlices}), each in a turn
 * {@link writeTurn} grants, and waits with `drained` whenever `target` needs draining. Answers
 * true once every slice was handed to `target`; false, having written no more, as soon as
 * `drained` answers false (the client did not take them) or `target` was ended or destroyed
 * meanwhile (a write after the end would be an error).
 */
export async function writePaced(
  target: Writable,
  chunks: Iterable<Buffer>,
  drained: () => Promise<boolean>,
): Promise<boolean> {
  for (const slice of writeSlices(chunks)) {
    await writeTurn();
    if (target.destroyed || target.writableEnded) return false;
    if (slice.length === 1) target.write(slice[0]);
    else {
      // Corked, the slice leaves as one chunk of the response in one system call.
      target.cork();
      for (const part of slice) target.write(part);
      target.uncork();
    }
    if (target.writableNeedDrain && !(await drained())) return false;
  }
  return true;
}
