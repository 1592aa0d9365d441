import type { PostChangeEvent } from "@posts/domain";
import type { CloudEventRenderer } from "./cloud-event.js";

/**
 * One change event as a Server-Sent Events message, encoded once: `id`, `event` and the
 * CloudEvent on one `data` line. A stream writes the bytes themselves, never a copy, so that a
 * message the hub shares among a thousand followers is held once, however large its post.
 */
export interface FeedMessage {
  readonly number: number;
  readonly bytes: Buffer;
}

/** `event` rendered by `render` and framed as a Server-Sent Events message. */
export function feedMessage(event: PostChangeEvent, render: CloudEventRenderer): FeedMessage {
  return {
    number: event.number,
    bytes: Buffer.from(`id: ${event.number}\nevent: ${event.type}\ndata: ${render(event)}\n\n`),
  };
}

/** The message that opens a stream resumed before the oldest event kept. */
export function resetMessage(oldest: number): string {
  return `event: reset\ndata: {"oldest":${oldest}}\n\n`;
}
