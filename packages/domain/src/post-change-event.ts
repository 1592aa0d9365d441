import type { Post } from "./post.js";

/** The kinds of change a post goes through, as the event's `type` names them. */
export type PostChangeType = "post.created" | "post.updated" | "post.deleted";

/** The names of {@link PostChangeType}, in the order a post can go through them. */
export const POST_CHANGE_TYPES: readonly PostChangeType[] = ["post.created", "post.updated", "post.deleted"];

/** What every change event carries, whatever its type. */
interface ChangeEventHead {
  /**
   * The event's place in the one order of every change of every post: 1, 2, 3, … with no gap
   * and no repeat; a post's events are numbered in the order of its changes.
   */
  readonly number: number;
  /** The post that changed. */
  readonly postId: number;
  /**
   * The change's instant: the post's `updatedAt` for a creation or an update (its `createdAt`
   * for a creation, which is the same), the store's clock at the deletion for a deletion.
   */
  readonly occurredAt: Date;
}

/**
 * One successful change of one post, once it has its number. A creation and an update carry
 * the post as it was right after the change; a deletion carries only the post's id (the post is
 * gone, and with it perhaps its author). A change that failed or was rolled back has no event,
 * and a replayed idempotent creation, which changes nothing, has none either.
 */
export type PostChangeEvent =
  | (ChangeEventHead & { readonly type: "post.created"; readonly post: Post })
  | (ChangeEventHead & { readonly type: "post.updated"; readonly post: Post })
  | (ChangeEventHead & { readonly type: "post.deleted" });

/**
 * The bytes of text an event carries: its post's title, content and author's email in UTF-8 (none
 * for a deletion). What the `maxBytes` of `ChangeEventLog.readAfter` counts: an event's size on
 * the wire grows with it, and the rest of an event is small and of bounded size.
 */
export function changeEventTextBytes(event: PostChangeEvent): number {
  if (event.type === "post.deleted") return 0;
  const { title, content, author } = event.post;
  return utf8Bytes(title) + utf8Bytes(content) + utf8Bytes(author.email);
}

/**
 * The length of `text` in UTF-8, a lone surrogate counted as the three bytes of U+FFFD. Counted
 * from the UTF-16 code units, without encoding: a content may be megabytes.
 */
export function utf8Bytes(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      // A surrogate pair: four bytes for its two units.
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 2;
        i++;
        continue;
      }
    }
    if (unit >= 0x800) bytes += 2;
    else if (unit >= 0x80) bytes += 1;
  }
  return bytes;
}
