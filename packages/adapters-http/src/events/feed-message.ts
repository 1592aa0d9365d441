import { setImmediate as nextTurn } from "node:timers/promises";
import type { PostChangeEvent } from "@posts/domain";
import { CONTENT_PART_CHARACTERS, escapedInParts } from "../routes/post-serializer.js";
import type { CloudEventRenderer } from "./cloud-event.js";

/**
 * One change event as a Server-Sent Events message, encoded once: `id`, `event` and the
 * CloudEvent on one `data` line. A stream writes the bytes themselves, never a copy, so that a
 * message the hub shares among a thousand followers is held once, however large its post.
 */
export interface FeedMessage {
  readonly number: number;
  /** The message's bytes, in order: those of a large content in parts, never joined. */
  readonly chunks: readonly Buffer[];
  /** The sum of the chunks' lengths. */
  readonly byteLength: number;
}

/** `event` rendered by `render` and framed as a Server-Sent Events message. */
export function feedMessage(event: PostChangeEvent, render: CloudEventRenderer): FeedMessage {
  const bytes = Buffer.from(`id: ${event.number}\nevent: ${event.type}\ndata: ${render(event)}\n\n`);
  return { number: event.number, chunks: [bytes], byteLength: bytes.length };
}

/** {@link feedMessage}, the same bytes, encoded by {@link encodeInSlices}. */
export async function feedMessageInSlices(
  event: PostChangeEvent,
  render: CloudEventRenderer,
): Promise<FeedMessage> {
  const chunks = await encodeInSlices(
    event,
    render,
    `id: ${event.number}\nevent: ${event.type}\ndata: `,
    "\n\n",
  );
  return { number: event.number, chunks, byteLength: byteLengthOf(chunks) };
}

/** The sum of the lengths of `chunks`. */
export function byteLengthOf(chunks: readonly Buffer[]): number {
  let bytes = 0;
  for (const chunk of chunks) bytes += chunk.length;
  return bytes;
}

/** About the most UTF-16 code units of a content escaped and encoded in one turn of the event loop. */
export const SLICE_UNITS = 512 * 1024;
const EMPTY_CONTENT = '"content":""';

/**
 * `before`, the CloudEvent `render` makes of `event`, and `after`, in UTF-8, as chunks: joined,
 * the bytes of `Buffer.from(before + render(event) + after)`. A content longer than
 * {@link SLICE_UNITS} is escaped and encoded in parts (`escapedInParts`), with a turn of the event
 * loop after each {@link SLICE_UNITS} of them: escaping and encoding a post of 10 MB in one go
 * holds the loop for tens of milliseconds, and the requests waiting behind it (a health check)
 * with it. The parts are never joined: one buffer of the whole would be megabytes of fresh memory
 * touched in one turn, which costs tens of milliseconds more where the kernel is slow to map
 * pages (a virtual machine's).
 */
export async function encodeInSlices(
  event: PostChangeEvent,
  render: CloudEventRenderer,
  before: string,
  after: string,
): Promise<Buffer[]> {
  if (event.type === "post.deleted" || event.post.content.length <= SLICE_UNITS) {
    return [Buffer.from(before + render(event) + after)];
  }
  const { content } = event.post;
  // Rendered with an empty content, the rest is small. Every other string of the CloudEvent is
  // JSON-escaped, so its quotes are preceded by a backslash: the first `"content":""` is the field.
  const json = render({ ...event, post: { ...event.post, content: "" } });
  const at = json.indexOf(EMPTY_CONTENT) + EMPTY_CONTENT.length - 1;
  const parts: Buffer[] = [Buffer.from(before + json.slice(0, at))];
  // In parts of 32 Ki characters, whose strings and buffers are small objects in memory V8 and
  // malloc reuse; a part of 512 Ki would be a new large object on V8's heap, fresh pages, each time.
  let units = 0;
  for (const part of escapedInParts(content)) {
    parts.push(part);
    units += CONTENT_PART_CHARACTERS;
    if (units >= SLICE_UNITS) {
      units = 0;
      await nextTurn();
    }
  }
  parts.push(Buffer.from(json.slice(at) + after));
  return parts;
}

/** The message that opens a stream resumed before the oldest event kept. */
export function resetMessage(oldest: number): string {
  return `event: reset\ndata: {"oldest":${oldest}}\n\n`;
}
