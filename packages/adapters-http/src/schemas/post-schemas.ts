import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  SEARCH_MAX_CODE_POINTS,
  TITLE_MAX_CODE_POINTS,
} from "@posts/domain";
import { type Static, Type } from "typebox";
import { TimestampSchema } from "./common-schemas.js";

/** A post on the wire (docs/posts.md#a-post-on-the-wire). Closed: the serializer writes these properties and nothing else. */
export const PostSchema = Type.Object(
  {
    id: Type.Integer({ minimum: 1 }),
    title: Type.String(),
    content: Type.String(),
    createdAt: TimestampSchema,
    updatedAt: TimestampSchema,
    user: Type.Object(
      { id: Type.Integer({ minimum: 1 }), email: Type.String() },
      { additionalProperties: false, description: "The author: id and email only" },
    ),
  },
  { additionalProperties: false },
);

/** A post as the wire shows it. */
export type PostJson = Static<typeof PostSchema>;

/** One page of the newest-first listing. */
export const PostPageSchema = Type.Object(
  {
    content: Type.Array(PostSchema, { description: "Posts, newest first" }),
    size: Type.Integer({ description: "The page size used" }),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description:
        "Cursor of the next (older) page; null when no older post follows. A search page reads a bounded " +
        "number of posts and bytes of their text, so it may hold fewer than size posts, even none, while " +
        "this continues the search",
    }),
  },
  { additionalProperties: false },
);

/** Query of the listing. Documentation only: the domain validates it. */
export const PostPageQuerySchema = Type.Object({
  size: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })),
  cursor: Type.Optional(Type.String({ description: "Opaque cursor from a previous page's nextCursor" })),
  userId: Type.Optional(Type.Integer({ minimum: 0, description: "Only this author's posts" })),
  q: Type.Optional(
    Type.String({
      maxLength: SEARCH_MAX_CODE_POINTS,
      description:
        "Only posts whose title or content contains this text (ASCII case ignored; %, _ and \\ match themselves). " +
        "At most 200 code points, no U+0000; empty = no search. Each page reads a bounded number of posts " +
        "and bytes of their text: follow nextCursor until it is null to see every match",
    }),
  ),
});

/** Request headers of GET by id and of a page. Documentation only. */
export const ConditionalReadHeadersSchema = Type.Object({
  "If-None-Match": Type.Optional(
    Type.String({
      description: "Entity tags of the copy the client holds, or *: 304 without a body when one is current",
      examples: ['"12.mgx3k2ab.AbCdEfGh"'],
    }),
  ),
});

/** Request headers of PATCH and DELETE. Documentation only. */
export const ConditionalWriteHeadersSchema = Type.Object({
  "If-Match": Type.Optional(
    Type.String({
      description:
        "Entity tags (from ETag) the post must still have, or *: otherwise 412 and nothing changes. " +
        "Strong comparison; a malformed value matches nothing",
      examples: ['"12.mgx3k2ab.AbCdEfGh"'],
    }),
  ),
});

/** Request headers of POST. Documentation only: the domain validates the key. */
export const IdempotentCreateHeadersSchema = Type.Object({
  "Idempotency-Key": Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: "^[\\x21-\\x7e]+$",
      description:
        "1 to 255 visible ASCII characters. A retry with the same key, title and content creates nothing and " +
        "answers the first post's Location (Idempotent-Replayed: true); other title or content → 422",
    }),
  ),
});

/** Response headers, as OpenAPI documents them. */
export const RESPONSE_HEADERS = {
  strongETag: {
    ETag: { type: "string", description: 'Strong entity tag of this version of the post ("…")' },
  },
  weakETag: { ETag: { type: "string", description: 'Weak entity tag of this page (W/"…")' } },
  noCache: {
    "Cache-Control": { type: "string", enum: ["no-cache"], description: "Revalidate before reuse" },
  },
  location: { Location: { type: "string", format: "uri", description: "Absolute URL of the post" } },
  replayed: {
    "Idempotent-Replayed": {
      type: "string",
      enum: ["true"],
      description: "Present when the Idempotency-Key made this post before: nothing was created",
    },
  },
  nextLink: {
    Link: {
      type: "string",
      description: '<absolute URL of the next page>; rel="next", when nextCursor is not null',
    },
  },
} as const;

/**
 * The `:id` path parameter: a post's id. Documentation only, and of valid input only: the
 * server reads the segment as text, and answers anything but digits (see `ID_PATTERN`) with
 * 404 on GET and 403 on PATCH and DELETE.
 */
export const PostIdParamsSchema = Type.Object({ id: Type.Integer({ format: "int64", minimum: 1 }) });

const Title = Type.String({
  minLength: 1,
  maxLength: TITLE_MAX_CODE_POINTS,
  description: "Not blank; at most 255 code points; no U+0000 or lone surrogate",
});
const Content = Type.String({ minLength: 1, description: "Not blank; no U+0000 or lone surrogate" });

/** Body of POST /api/v1/posts. Documentation only: the domain validates it. */
export const NewPostBodySchema = Type.Object({ title: Title, content: Content });

/** Body of PATCH; `null` counts as absent. Documentation only: the domain validates it. */
export const PostChangesBodySchema = Type.Object({
  title: Type.Optional(Type.Union([Title, Type.Null()])),
  content: Type.Optional(Type.Union([Content, Type.Null()])),
});
