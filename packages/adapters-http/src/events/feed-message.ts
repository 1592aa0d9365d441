import { setImmediate as nextTurn } from "node:timers/promises";
import type { PostChangeEvent } from "@posts/domain";
import type { CloudEventRenderer } from "./cloud-event.js";

/**
 * One change event as a Server-Sent Events message, encoded once: `id`, `event` and the
 * CloudEvent on one `data` line. A stream writes the bytes themselves, never a copy, so that a
 * message the hub shares among a thousand followers is held once, however large its post.
 */
export interface FeedMessage {
  readonly number: number;
  /** The message's bytes, in order: those of a large content in slices, never joined. */
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

/** The most UTF-16 code units of a content escaped and encoded in one go. */
export const SLICE_UNITS = 512 * 1024;
const EMPTY_CONTENT = '"content":""';

/**
 * `before`, the CloudEvent `render` makes of `event`, and `after`, in UTF-8, as chunks: joined,
 * the bytes of `Buffer.from(before + render(event) + after)`. A content longer than
 * {@link SLICE_UNITS} is escaped and encoded a slice at a time, with a turn of the event loop
 * between slices: escaping and encoding a post of 10 MB in one go holds the loop for tens of
 * milliseconds, and the requests waiting behind it (a health check) with it. The slices are never
 * joined: one buffer of the whole would be megabytes of fresh memory touched in one turn, which
 * costs tens of milliseconds more where the kernel is slow to map pages (a virtual machine's).
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
  const parts = [Buffer.from(before + json.slice(0, at))];
  for (let start = 0; start < content.length; ) {
    let end = Math.min(start + SLICE_UNITS, content.length);
    // A surrogate pair stays in one slice: JSON.stringify escapes a lone half of one.
    const last = content.charCodeAt(end - 1);
    if (end < content.length && last >= 0xd800 && last <= 0xdbff) end--;
    parts.push(Buffer.from(JSON.stringify(content.slice(start, end)).slice(1, -1)));
    start = end;
    await nextTurn();
  }
  parts.push(Buffer.from(json.slice(at) + after));
  return parts;
}

/** The message that opens a stream resumed before the oldest event kept. */
export function resetMessage(oldest: number): string {
  return `event: reset\ndata: {"oldest":${oldest}}\n\n`;
}
