import { HTTP_MESSAGES } from "../errors/http-messages.js";
import {
  ConditionalReadHeadersSchema,
  ConditionalWriteHeadersSchema,
  IdempotentCreateHeadersSchema,
  NewPostBodySchema,
  PostChangesBodySchema,
  PostIdParamsSchema,
  PostPageQuerySchema,
  PostPageSchema,
  PostSchema,
  RESPONSE_HEADERS,
} from "./post-schemas.js";
import {
  BODY_REFUSALS,
  EMPTY_BODY_TOO,
  eitherResponse,
  emptyResponse,
  envelopeResponse,
  errorJsonResponse,
  INVALID_TOKEN,
  INVALID_TOKEN_OR_USER_GONE,
  routeResponses,
  textResponse,
} from "./responses.js";
import { PUBLIC, SECURED } from "./security.js";

const TAGS = ["posts"];

const forbidden = envelopeResponse("No token, or no ROLE_USER");
const notFoundText = textResponse(`No such post: ${HTTP_MESSAGES.postNotFound}`);
const preconditionFailed = envelopeResponse(
  'If-Match names neither the post\'s current ETag (strong comparison) nor *: "Precondition Failed", nothing changed',
);
const notModified = (description: string, headers: object) => ({
  ...emptyResponse(`Not Modified: If-None-Match names the current ${description} (weak comparison) or is *`),
  headers,
});
/** The 401 of PATCH and DELETE: the token (JSON), or the post's author (text, `message`). */
const notAuthor = (message: string) =>
  eitherResponse(
    `Invalid token (JSON), or not the author (text: ${message})`,
    errorJsonResponse(""),
    textResponse(""),
  );

/** POST /api/v1/posts: create a post, idempotently under an Idempotency-Key. */
export const CreatePostRouteSchema = {
  operationId: "createPost",
  summary: "Create a post",
  tags: TAGS,
  security: SECURED,
  headers: IdempotentCreateHeadersSchema,
  body: NewPostBodySchema,
  response: routeResponses({
    201: {
      ...emptyResponse(
        "Created, or (Idempotent-Replayed: true) created before under this Idempotency-Key; " +
          "Location is the post's absolute URL",
      ),
      headers: { ...RESPONSE_HEADERS.location, ...RESPONSE_HEADERS.replayed },
    },
    400: envelopeResponse(
      "Body not a JSON object, an invalid Idempotency-Key (a message), or every failing field (errors)",
    ),
    401: INVALID_TOKEN_OR_USER_GONE,
    403: forbidden,
    ...BODY_REFUSALS,
    422: envelopeResponse(
      'The Idempotency-Key was used before with another title or content: "Unprocessable Entity", nothing created',
    ),
  }),
};

/** GET /api/v1/posts: one keyset page of the newest-first listing, optionally searched. */
export const ListPostsRouteSchema = {
  operationId: "listPosts",
  summary: "List posts, newest first, one keyset page at a time",
  tags: TAGS,
  security: PUBLIC,
  querystring: PostPageQuerySchema,
  headers: ConditionalReadHeadersSchema,
  response: routeResponses({
    200: {
      description: 'A page; a Link header (rel="next") names the next one when nextCursor is not null',
      headers: {
        ...RESPONSE_HEADERS.weakETag,
        ...RESPONSE_HEADERS.noCache,
        ...RESPONSE_HEADERS.nextLink,
      },
      content: { "application/json": { schema: PostPageSchema } },
    },
    304: notModified("page tag", { ...RESPONSE_HEADERS.weakETag, ...RESPONSE_HEADERS.noCache }),
    400: envelopeResponse("Invalid size, cursor, userId or q"),
    401: INVALID_TOKEN,
  }),
};

/** GET /api/v1/posts/:id: one post. */
export const GetPostRouteSchema = {
  operationId: "getPost",
  summary: "Read one post",
  tags: TAGS,
  security: PUBLIC,
  params: PostIdParamsSchema,
  headers: ConditionalReadHeadersSchema,
  response: routeResponses({
    200: {
      description: "The post",
      headers: { ...RESPONSE_HEADERS.strongETag, ...RESPONSE_HEADERS.noCache },
      content: { "application/json": { schema: PostSchema } },
    },
    304: notModified("post tag", { ...RESPONSE_HEADERS.strongETag, ...RESPONSE_HEADERS.noCache }),
    401: INVALID_TOKEN,
    // A non-numeric id (a 404 envelope: no such path) is no valid input, which is all the document describes.
    404: notFoundText,
  }),
};

/** PATCH /api/v1/posts/:id: change the title and/or content of one's own post. */
export const PatchPostRouteSchema = {
  operationId: "updatePost",
  summary: "Change the title and/or content of one's own post",
  tags: TAGS,
  security: SECURED,
  params: PostIdParamsSchema,
  headers: ConditionalWriteHeadersSchema,
  body: PostChangesBodySchema,
  response: routeResponses({
    200: {
      description: "The post after the change, with its new ETag",
      headers: RESPONSE_HEADERS.strongETag,
      content: { "application/json": { schema: PostSchema } },
    },
    400: {
      ...envelopeResponse(
        "Body not a JSON object, or every failing field (the envelope); or an EMPTY body, without Content-Type, " +
          "when title and content are both null or absent. A client must test the status, not only the body: " +
          "openapi-fetch, for one, answers `error: undefined` for a body-less failure",
      ),
      ...EMPTY_BODY_TOO,
    },
    401: notAuthor(HTTP_MESSAGES.notAuthorToModify),
    403: forbidden,
    404: notFoundText,
    412: preconditionFailed,
    ...BODY_REFUSALS,
  }),
};

/** DELETE /api/v1/posts/:id: delete one's own post. */
export const DeletePostRouteSchema = {
  operationId: "deletePost",
  summary: "Delete one's own post",
  tags: TAGS,
  security: SECURED,
  params: PostIdParamsSchema,
  headers: ConditionalWriteHeadersSchema,
  response: routeResponses({
    204: emptyResponse("Deleted"),
    401: notAuthor(HTTP_MESSAGES.notAuthorToDelete),
    403: forbidden,
    404: notFoundText,
    412: preconditionFailed,
  }),
};
