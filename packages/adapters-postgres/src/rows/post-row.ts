import type { Post } from "@posts/domain";
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
