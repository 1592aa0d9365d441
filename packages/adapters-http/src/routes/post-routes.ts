import { createPost, deletePost, getPost, listPosts, patchPost } from "@posts/domain";
import type { FastifyPluginCallback } from "fastify";
import { authenticated, idParam } from "../auth/route-guards.js";
import { sendDomainError } from "../errors/domain-error-responses.js";
import {
  COMMON_RESPONSES,
  emptyResponse,
  envelopeResponse,
  errorJsonResponse,
  textResponse,
} from "../errors/error-schemas.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";
import { jsonObjectBody } from "../http/json-object-validator-compiler.js";
import {
  NewPostBodySchema,
  PostChangesBodySchema,
  PostIdParamsSchema,
  PostPageQuerySchema,
  PostPageSchema,
  PostSchema,
  toPostJson,
} from "./post-schemas.js";
import { absoluteUrl, type RouteContext } from "./route-context.js";

const POSTS = "/api/v1/posts";
const DIGITS = /^[0-9]+$/;
const TAGS = ["posts"];
const SECURED = [{ authToken: [] }];

const forbidden = envelopeResponse("No token, no ROLE_USER, or a non-numeric id");
const notFoundText = textResponse(`No such post: ${HTTP_MESSAGES.postNotFound}`);

/**
 * The posts resource (CONTRACT §2). Handlers parse, call the use case and map its result;
 * the order of outcomes is authentication (401) → guards (403) → body parsing (415, 413, 400)
 * → the use case's own ordered checks.
 */
export const postRoutes: FastifyPluginCallback<RouteContext> = (app, ctx, done) => {
  const { deps, format, sendEnvelope, guards } = ctx;

  app.post(
    POSTS,
    {
      onRequest: guards.requireUser,
      schema: {
        summary: "Create a post",
        tags: TAGS,
        security: SECURED,
        body: NewPostBodySchema,
        response: {
          201: emptyResponse("Created; Location is the post's absolute URL"),
          400: envelopeResponse("Body not a JSON object, or every failing field"),
          403: forbidden,
          413: envelopeResponse("Body over the limit"),
          415: envelopeResponse("Body not JSON"),
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
      });
      if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
      return reply
        .code(201)
        .header("location", absoluteUrl(request, `${POSTS}/${result.value.id}`))
        .send();
    },
  );

  app.get(
    POSTS,
    {
      schema: {
        summary: "List posts, newest first, one keyset page at a time",
        tags: TAGS,
        querystring: PostPageQuerySchema,
        response: {
          200: {
            ...PostPageSchema,
            description: 'A page; a Link header (rel="next") names the next one when nextCursor is not null',
          },
          400: envelopeResponse("Invalid size, cursor or userId"),
          ...COMMON_RESPONSES,
        },
      },
    },
    async (request, reply) => {
      const query = request.query as Readonly<Record<string, unknown>>;
      const result = await listPosts(deps, { size: query.size, cursor: query.cursor, userId: query.userId });
      if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
      const page = result.value;
      if (page.nextCursor !== null) {
        const next = new URLSearchParams({ size: String(page.size), cursor: page.nextCursor });
        // The domain accepted userId, so it is digits (a string, or one value of a repeated key never gets here).
        if (typeof query.userId === "string") next.set("userId", query.userId);
        reply.header("link", `<${absoluteUrl(request, `${POSTS}?${next}`)}>; rel="next"`);
      }
      return reply.send({
        content: page.posts.map((post) => toPostJson(post, format)),
        size: page.size,
        nextCursor: page.nextCursor,
      });
    },
  );

  app.get(
    `${POSTS}/:id`,
    {
      schema: {
        summary: "Read one post",
        tags: TAGS,
        params: PostIdParamsSchema,
        response: {
          200: PostSchema,
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
      return reply.send(toPostJson(result.value, format));
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
        body: PostChangesBodySchema,
        response: {
          200: PostSchema,
          400: envelopeResponse(
            "Body not a JSON object, or every failing field; an EMPTY body when title and content are both null or absent",
          ),
          403: forbidden,
          404: notFoundText,
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
      });
      if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
      return reply.send(toPostJson(result.value, format));
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
        response: {
          204: emptyResponse("Deleted"),
          403: forbidden,
          404: notFoundText,
          ...COMMON_RESPONSES,
          401: {
            description: `Invalid token (JSON), or not the author (text: ${HTTP_MESSAGES.notAuthorToDelete})`,
            content: { ...errorJsonResponse("").content, ...textResponse("").content },
          },
        },
      },
    },
    async (request, reply) => {
      const result = await deletePost(deps, { principal: authenticated(request), postId: idParam(request) });
      if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
      return reply.code(204).send();
    },
  );

  done();
};
