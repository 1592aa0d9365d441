import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, type Post, TITLE_MAX_CODE_POINTS } from "@posts/domain";
import { type Static, Type } from "typebox";
import { TimestampSchema } from "../errors/error-schemas.js";
import type { TimestampFormatter } from "../http/timestamp-formatter.js";

/** A post on the wire (CONTRACT §1). Closed: the serializer writes these properties and nothing else. */
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
      description: "Cursor of the next (older) page; null when no older post follows",
    }),
  },
  { additionalProperties: false },
);

/** Query of the listing. Documentation only: the domain validates it. */
export const PostPageQuerySchema = Type.Object({
  size: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })),
  cursor: Type.Optional(Type.String({ description: "Opaque cursor from a previous page's nextCursor" })),
  userId: Type.Optional(Type.Integer({ minimum: 0, description: "Only this author's posts" })),
});

/** The `:id` path parameter. GET answers 404 and PATCH/DELETE 403 for anything but digits. */
export const PostIdParamsSchema = Type.Object({ id: Type.String({ pattern: "^[0-9]+$" }) });

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

/** Maps a domain post to its wire form. */
export function toPostJson(post: Post, format: TimestampFormatter): PostJson {
  return {
    id: post.id,
    title: post.title,
    content: post.content,
    createdAt: format(post.createdAt),
    updatedAt: format(post.updatedAt),
    user: { id: post.author.id, email: post.author.email },
  };
}
