import { createPost, deletePost, getPost, listPosts, patchPost } from "@posts/domain";
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from "fastify";
import { authenticated, idParam } from "../auth/route-guards.js";
import { sendDomainError } from "../errors/domain-error-responses.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";
import {
  type EntityTag,
  formatEntityTag,
  matchesWeakly,
  parseEntityTagCondition,
} from "../http/entity-tag-condition.js";
import { jsonObjectBody } from "../http/json-object-validator-compiler.js";
import {
  COMMON_RESPONSES,
  emptyResponse,
  envelopeResponse,
  errorJsonResponse,
  textResponse,
} from "../schemas/error-schemas.js";
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
} from "../schemas/post-schemas.js";
import { absoluteUrl, type RouteContext } from "./route-context.js";

const POSTS = "/api/v1/posts";
const DIGITS = /^[0-9]+$/;
const TAGS = ["posts"];
const SECURED = [{ authToken: [] }];

const forbidden = envelopeResponse("No token, no ROLE_USER, or a non-numeric id");
const notFoundText = textResponse(`No such post: ${HTTP_MESSAGES.postNotFound}`);
const preconditionFailed = envelopeResponse(
  'If-Match names neither the post\'s current ETag (strong comparison) nor *: "Precondition Failed", nothing changed',
);
const notModified = (description: string, headers: object) => ({
  ...emptyResponse(`Not Modified: If-None-Match names the current ${description} (weak comparison) or is *`),
  headers,
});
const NO_CACHE = "no-cache";
/** What Fastify sends a serialized object as; the serializer's JSON text goes out the same. */
const JSON_TYPE = "application/json; charset=utf-8";

/** Sends JSON text the serializer wrote; the route's response schema stays for OpenAPI only. */
function sendJson(reply: FastifyReply, json: string): FastifyReply {
  return reply.header("content-type", JSON_TYPE).send(json);
}

/** Sets the ETag of an answer that carries one post or a page. */
function tagged(reply: FastifyReply, tag: EntityTag): FastifyReply {
  return reply.header("etag", formatEntityTag(tag));
}

/**
 * Whether the request's `If-None-Match` says the client holds the representation tagged `tag`
 * already (RFC 9110 §13.1.2): then a GET answers 304 without serializing anything.
 */
function holdsCurrent(request: FastifyRequest, tag: EntityTag): boolean {
  const condition = parseEntityTagCondition(request.headers["if-none-match"]);
  return condition !== undefined && matchesWeakly(condition, tag);
}

/**
 * The `Idempotency-Key` exactly as received, for the domain to judge. A header sent twice is
 * joined with ", " as Node joins it, which has a space and so is no valid key.
 */
function idempotencyKey(request: FastifyRequest): string | undefined {
  const key = request.headers["idempotency-key"];
  return Array.isArray(key) ? key.join(", ") : key;
}

/**
 * The posts resource (CONTRACT §2, §7–§9). Handlers parse, call the use case and map its result;
 * the order of outcomes is authentication (401) → guards (403) → body parsing (415, 413, 400)
 * → the use case's own ordered checks (an invalid Idempotency-Key first, a failed If-Match
 * last). Answers that carry a post or a page carry its ETag; a GET whose If-None-Match names it
 * is answered 304 before anything is serialized.
 */
export const postRoutes: FastifyPluginCallback<RouteContext> = (app, ctx, done) => {
  const { deps, sendEnvelope, guards, entityTags, serializer } = ctx;
  const expectedVersions = (request: FastifyRequest) =>
    entityTags.expectedVersions(parseEntityTagCondition(request.headers["if-match"]), idParam(request));

  app.post(
    POSTS,
    {
      onRequest: guards.requireUser,
      schema: {
        summary: "Create a post",
        tags: TAGS,
        security: SECURED,
        headers: IdempotentCreateHeadersSchema,
        body: NewPostBodySchema,
        response: {
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
          403: forbidden,
          413: envelopeResponse("Body over the limit"),
          415: envelopeResponse("Body not JSON"),
          422: envelopeResponse(
            'The Idempotency-Key was used before with another title or content: "Unprocessable Entity", nothing created',
          ),
          ...COMMON_RESPONSES,
          401: errorJsonResponse("Invalid token, or the token's user no longer exists"),
        },
      },
    },
    async (request, reply) => {
      const body = jsonObjectBody(request.body);
      const result = await createPost(deps, {
        principal: authenticated(request),
        title: body.title,
        content: body.content,
        idempotencyKey: idempotencyKey(request),
      });
      if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
      reply.code(201).header("location", absoluteUrl(request, `${POSTS}/${result.value.id}`));
      if (result.value.replayed) reply.header("idempotent-replayed", "true");
      return reply.send();
    },
  );

  app.get(
    POSTS,
    {
      schema: {
        summary: "List posts, newest first, one keyset page at a time",
        tags: TAGS,
        querystring: PostPageQuerySchema,
        headers: ConditionalReadHeadersSchema,
        response: {
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
          ...COMMON_RESPONSES,
        },
      },
    },
    async (request, reply) => {
      const query = request.query as Readonly<Record<string, unknown>>;
      const result = await listPosts(deps, {
        size: query.size,
        cursor: query.cursor,
        userId: query.userId,
        q: query.q,
      });
      if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
      const page = result.value;
      const tag = entityTags.page(page);
      tagged(reply, tag).header("cache-control", NO_CACHE);
      if (holdsCurrent(request, tag)) return reply.code(304).send();
      if (page.nextCursor !== null) {
        const next = new URLSearchParams({ size: String(page.size), cursor: page.nextCursor });
        // The domain accepted userId and q, so each is one string (a repeated key never gets here).
        if (typeof query.userId === "string") next.set("userId", query.userId);
        if (typeof query.q === "string" && query.q !== "") next.set("q", query.q);
        reply.header("link", `<${absoluteUrl(request, `${POSTS}?${next}`)}>; rel="next"`);
      }
      return sendJson(reply, serializer.page(page));
    },
  );

  app.get(
    `${POSTS}/:id`,
    {
      schema: {
        summary: "Read one post",
        tags: TAGS,
        params: PostIdParamsSchema,
        headers: ConditionalReadHeadersSchema,
        response: {
          200: {
            description: "The post",
            headers: { ...RESPONSE_HEADERS.strongETag, ...RESPONSE_HEADERS.noCache },
            content: { "application/json": { schema: PostSchema } },
          },
          304: notModified("post tag", { ...RESPONSE_HEADERS.strongETag, ...RESPONSE_HEADERS.noCache }),
          404: {
            description: `No such post (text), or a non-numeric id: a path that does not exist (envelope)`,
            content: { ...notFoundText.content, ...envelopeResponse("").content },
          },
          ...COMMON_RESPONSES,
        },
      },
    },
    async (request, reply) => {
      const id = idParam(request);
      // A non-numeric id is a path that does not exist, not a post that does not.
      if (!DIGITS.test(id)) return sendEnvelope(reply, 404, { message: HTTP_MESSAGES.notFound });
      const result = await getPost(deps, id);
      if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
      const tag = entityTags.post(result.value);
      tagged(reply, tag).header("cache-control", NO_CACHE);
      if (holdsCurrent(request, tag)) return reply.code(304).send();
      return sendJson(reply, serializer.post(result.value));
    },
  );

  app.patch(
    `${POSTS}/:id`,
    {
      onRequest: [guards.requireDigitId, guards.requireUser],
      schema: {
        summary: "Change the title and/or content of one's own post",
        tags: TAGS,
        security: SECURED,
        params: PostIdParamsSchema,
        headers: ConditionalWriteHeadersSchema,
        body: PostChangesBodySchema,
        response: {
          200: {
            description: "The post after the change, with its new ETag",
            headers: RESPONSE_HEADERS.strongETag,
            content: { "application/json": { schema: PostSchema } },
          },
          400: envelopeResponse(
            "Body not a JSON object, or every failing field; an EMPTY body when title and content are both null or absent",
          ),
          403: forbidden,
          404: notFoundText,
          412: preconditionFailed,
          413: envelopeResponse("Body over the limit"),
          415: envelopeResponse("Body not JSON"),
          ...COMMON_RESPONSES,
          401: {
            description: `Invalid token (JSON), or not the author (text: ${HTTP_MESSAGES.notAuthorToModify})`,
            content: { ...errorJsonResponse("").content, ...textResponse("").content },
          },
        },
      },
    },
    async (request, reply) => {
      const body = jsonObjectBody(request.body);
      const result = await patchPost(deps, {
        principal: authenticated(request),
        postId: idParam(request),
        title: body.title,
        content: body.content,
        expectedVersions: expectedVersions(request),
      });
      if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
      return sendJson(tagged(reply, entityTags.post(result.value)), serializer.post(result.value));
    },
  );

  app.delete(
    `${POSTS}/:id`,
    {
      onRequest: [guards.requireDigitId, guards.requireUser],
      schema: {
        summary: "Delete one's own post",
        tags: TAGS,
        security: SECURED,
        params: PostIdParamsSchema,
        headers: ConditionalWriteHeadersSchema,
        response: {
          204: emptyResponse("Deleted"),
          403: forbidden,
          404: notFoundText,
          412: preconditionFailed,
          ...COMMON_RESPONSES,
          401: {
            description: `Invalid token (JSON), or not the author (text: ${HTTP_MESSAGES.notAuthorToDelete})`,
            content: { ...errorJsonResponse("").content, ...textResponse("").content },
          },
        },
      },
    },
    async (request, reply) => {
      const result = await deletePost(deps, {
        principal: authenticated(request),
        postId: idParam(request),
        expectedVersions: expectedVersions(request),
      });
      if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
      return reply.code(204).send();
    },
  );

  done();
};
