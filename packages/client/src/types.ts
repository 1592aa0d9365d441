import type { components, paths } from "./generated/openapi.js";

type Schemas = components["schemas"];

/** A post as the service sends it: `id`, `title`, `content`, `createdAt`, `updatedAt`, `user` ({ id, email }). */
export type Post = Schemas["Post"];

/** One keyset page of posts, newest first; `nextCursor` is null on the last page. */
export type PostPage = Schemas["PostPage"];

/** A user as the service sends it: `id`, `email`, `createdAt`. */
export type User = Schemas["User"];

/** The answer to a login: the JWT to send as `X-AUTH-TOKEN`, and how long it lasts. */
export type Login = Schemas["Login"];

/** The body of a registration or a login. */
export type Credentials = Schemas["Credentials"];

/** The body of a create: `title` and `content`. */
export type NewPost = Schemas["NewPost"];

/** The fields an update changes; absent (or null) ones stay as they are. */
export type PostChanges = Schemas["PostChanges"];

/** The query of a listing: `size` (1–100), `userId`, `q` (search); the cursor is the iterator's business. */
export type ListQuery = Omit<NonNullable<paths["/api/v1/posts"]["get"]["parameters"]["query"]>, "cursor">;

/** A post with the version (its `ETag`) it was read at: what an update or a delete is based on. */
export interface Versioned<T> {
  readonly value: T;
  /** The strong entity tag the service sent with it, sent back as `If-Match`. */
  readonly version: string;
}

/** What a create answers: the new post's id and URL; `replayed` when the service had created it for an earlier attempt with the same key. */
export interface Created {
  readonly id: number;
  readonly location: string;
  readonly replayed: boolean;
  /** The Idempotency-Key it was created under: give it again to retry this create later. */
  readonly idempotencyKey: string;
}

/**
 * What a delete answers. `confirmed` is true when this call saw the 204. It is false when an
 * earlier attempt's answer was lost and a retry found no post: the post is gone, most likely
 * deleted by that attempt, but this call cannot prove it was not someone else.
 */
export interface Deleted {
  readonly confirmed: boolean;
}
