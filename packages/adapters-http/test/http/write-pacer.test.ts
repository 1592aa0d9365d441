import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  pacedReadable,
  TURN_BYTES,
  WRITE_SLICE_BYTES,
  writePaced,
  writeSlices,
  writeTurn,
} from "../../src/http/write-pacer.js";

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A writable that keeps what it was given and says it needs draining past `highWaterMark`. */
function sink(highWaterMark: number) {
  const chunks: Buffer[] = [];
  let release: (() => void) | undefined;
  const target = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(Buffer.from(chunk));
      // Taken later, as a socket whose kernel buffer is full takes it.
      release = callback;
    },
  });
  return { target, chunks, take: () => release?.() };
}

describe("write pacing", () => {
  it("cuts chunks into slices of at most WRITE_SLICE_BYTES, large ones as views, small ones together", () => {
    const large = Buffer.alloc(WRITE_SLICE_BYTES * 2 + 10, 1);
    const small = [Buffer.from("a"), Buffer.from("bc")];
    const slices = [...writeSlices([...small, large, Buffer.alloc(0), Buffer.from("z")])];
    for (const slice of slices) {
      expect(slice.reduce((sum, part) => sum + part.length, 0)).toBeLessThanOrEqual(WRITE_SLICE_BYTES);
    }
    expect(Buffer.concat(slices.flat())).toEqual(Buffer.concat([...small, large, Buffer.from("z")]));
    // The first slice holds the small chunks and the start of the large one, a view of its bytes.
    expect(slices[0]?.slice(0, 2)).toEqual(small);
    expect(slices[0]?.[2]?.buffer).toBe(large.buffer);
    expect(slices).toHaveLength(3);
  });

  it("grants at most TURN_BYTES of slices a turn, in the order asked", async () => {
    const perTurn = TURN_BYTES / WRITE_SLICE_BYTES;
    const granted: number[] = [];
    const asked = Array.from({ length: perTurn + 3 }, (_, i) => writeTurn().then(() => granted.push(i)));
    // Nothing is granted in the turn that asks.
    await Promise.resolve();
    expect(granted).toEqual([]);
    await turn();
    expect(granted).toEqual(Array.from({ length: perTurn }, (_, i) => i));
    await Promise.all(asked);
    expect(granted).toEqual(Array.from({ length: perTurn + 3 }, (_, i) => i));
  });

  it("writes every byte in order, waiting for a drain whenever the target needs one", async () => {
    const { target, chunks, take } = sink(1024);
    const data = Buffer.alloc(WRITE_SLICE_BYTES * 3 + 7);
    for (let i = 0; i < data.length; i++) data[i] = i % 251;
    let drains = 0;
    const written = writePaced(target, [data], async () => {
      drains++;
      await turn();
      take();
      return true;
    });
    expect(await written).toBe(true);
    // After each of the three full slices; the last, of 7 bytes, fits under the high-water mark.
    expect(drains).toBe(3);
    expect(Buffer.concat(chunks)).toEqual(data);
  });

  it("stops, writing no more, when the drain does not come or the target has ended", async () => {
    const stalled = sink(1024);
    expect(await writePaced(stalled.target, [Buffer.alloc(WRITE_SLICE_BYTES * 2)], async () => false)).toBe(
      false,
    );
    expect(stalled.chunks).toHaveLength(1);

    const ended = sink(WRITE_SLICE_BYTES * 4);
    const written = writePaced(ended.target, [Buffer.alloc(WRITE_SLICE_BYTES * 2)], async () => true);
    ended.target.end();
    expect(await written).toBe(false);
    expect(ended.chunks).toHaveLength(0);
  });

  it("reads an asynchronous source as it comes, a slice at a time, and ends it when destroyed", async () => {
    const data = Buffer.alloc(WRITE_SLICE_BYTES * 3 + 5, 9);
    let asked = 0;
    let ended = false;
    async function* source(): AsyncGenerator<Buffer> {
      try {
        for (const chunk of [Buffer.from("["), data, Buffer.from("]")]) {
          asked++;
          await turn();
          yield chunk;
        }
      } finally {
        ended = true;
      }
    }
    const read: Buffer[] = [];
    for await (const chunk of pacedReadable(source())) read.push(chunk as Buffer);
    expect(read.every((chunk) => chunk.length <= WRITE_SLICE_BYTES)).toBe(true);
    expect(Buffer.concat(read)).toEqual(Buffer.concat([Buffer.from("["), data, Buffer.from("]")]));

    // Destroyed after its first slice: the source is asked for nothing more, and ended.
    asked = 0;
    ended = false;
    const stream = pacedReadable(source());
    const [first] = await stream.take(1).toArray();
    expect((first as Buffer).length).toBe(WRITE_SLICE_BYTES);
    stream.destroy();
    await expect.poll(() => ended).toBe(true);
    expect(asked).toBe(2);
  });

  it("reads as a stream the same bytes, a slice at a time", async () => {
    const data = Buffer.alloc(WRITE_SLICE_BYTES * 2 + 5, 7);
    const read: Buffer[] = [];
    for await (const chunk of pacedReadable([Buffer.from("{"), data])) read.push(chunk as Buffer);
    expect(read.every((chunk) => chunk.length <= WRITE_SLICE_BYTES)).toBe(true);
    expect(Buffer.concat(read)).toEqual(Buffer.concat([Buffer.from("{"), data]));
  });
});
