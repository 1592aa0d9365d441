import type { Post, ReadPost } from "@posts/domain";
import { parseInt8 } from "../connection/type-parsers.js";

/** A post joined with its author's email: what every post statement of this adapter selects. */
export interface PostRow {
  readonly id: number;
  readonly title: string;
  readonly content: string;
  readonly created_at: Date;
  readonly updated_at: Date;
  readonly author_id: number;
  readonly author_email: string;
}

/**
 * The one mapping from a post row to the domain's `Post`. Ids go through {@link parseInt8}
 * again so that a `Kysely` built without this adapter's type parsers still cannot leak a
 * string or a rounded number.
 */
export function toPost(row: PostRow): Post {
  return {
    id: parseInt8(row.id),
    title: row.title,
    content: row.content,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    author: { id: parseInt8(row.author_id), email: row.author_email },
  };
}

/**
 * A post row as the reads that may answer outlines select it: the content only when it is small
 * enough to read beside other posts, else `null`, and the content's size in bytes either way.
 */
export interface ReadRow extends Omit<PostRow, "content"> {
  readonly content: string | null;
  readonly content_bytes: number;
}

/**
 * The one mapping from a {@link ReadRow} (or a {@link PostRow}, a row known whole) to the
 * domain's post: whole, or an outline without content.
 */
export function toReadPost(row: ReadRow | PostRow): ReadPost {
  if (row.content !== null) return toPost(row as PostRow);
  return {
    id: parseInt8(row.id),
    title: row.title,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    author: { id: parseInt8(row.author_id), email: row.author_email },
    // A row without content is a ReadRow: a PostRow always has its content.
    contentBytes: (row as ReadRow).content_bytes,
  };
}
