import { createPost, deletePost, getPost, isWhole, listPosts, type PostPage, patchPost } from "@posts/domain";
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
import { LARGE_BODY_ABOVE_BYTES } from "../http/large-bodies.js";
import { pacedReadable } from "../http/write-pacer.js";
import { isDigitId } from "../schemas/common-schemas.js";
import {
  CreatePostRouteSchema,
  DeletePostRouteSchema,
  GetPostRouteSchema,
  ListPostsRouteSchema,
  PatchPostRouteSchema,
} from "../schemas/post-route-schemas.js";
import type { HeldPost } from "./large-posts.js";
import { CONTENT_PART_CHARACTERS } from "./post-serializer.js";
import { absoluteUrl, type RouteContext } from "./route-context.js";

const POSTS = "/api/v1/posts";
const NO_CACHE = "no-cache";
/** What Fastify sends a serialized object as; the serializer's JSON goes out the same. */
const JSON_TYPE = "application/json; charset=utf-8";

/** Sends the JSON the serializer wrote; the route's response schema stays for OpenAPI only. */
function sendJson(reply: FastifyReply, json: Buffer): FastifyReply {
  return reply.header("content-type", JSON_TYPE).send(json);
}

/**
 * The UTF-8 size of a PATCH's content when it is over `LARGE_BODY_ABOVE_BYTES`, else `undefined`
 * (also when it is no string, which the use case refuses). A text of fewer characters than a
 * third of the threshold is within it, at three bytes a UTF-16 unit at most, and is not measured.
 */
function largeContentBytes(content: unknown): number | undefined {
  if (typeof content !== "string" || content.length * 3 <= LARGE_BODY_ABOVE_BYTES) return undefined;
  const bytes = Buffer.byteLength(content);
  return bytes > LARGE_BODY_ABOVE_BYTES ? bytes : undefined;
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
 * The posts resource (docs/posts.md, docs/conditional-requests.md, docs/idempotency.md). Handlers parse, call the use case and map its result;
 * the order of outcomes is authentication (401) → guards (403) → body parsing (415, 413, 400)
 * → the use case's own ordered checks (an invalid Idempotency-Key first, a failed If-Match
 * last). Answers that carry a post or a page carry its ETag; a GET whose If-None-Match names it
 * is answered 304 before anything is serialized.
 */
export const postRoutes: FastifyPluginCallback<RouteContext> = (app, ctx, done) => {
  const { deps, sendEnvelope, guards, entityTags, serializer, largePosts, retryAfterSeconds } = ctx;
  // A page of whole posts in parts, the bytes of `serializer.page(page)`.
  function* pageParts(page: PostPage): Generator<Buffer> {
    yield serializer.pageStart();
    let index = 0;
    for (const post of page.posts) if (isWhole(post)) yield* serializer.pageItem(post, index++);
    yield serializer.pageEnd(page);
  }
  /** No room in the budget of large posts within the wait: 503 with Retry-After (docs/errors.md#503-and-retry-after). */
  const busy = (reply: FastifyReply) =>
    sendEnvelope(reply.header("retry-after", String(retryAfterSeconds)), 503, {
      message: HTTP_MESSAGES.unavailable,
    });
  const expectedVersions = (request: FastifyRequest) =>
    entityTags.expectedVersions(parseEntityTagCondition(request.headers["if-match"]), idParam(request));

  app.post(
    POSTS,
    { onRequest: guards.requireUser, schema: CreatePostRouteSchema },
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

  app.get(POSTS, { schema: ListPostsRouteSchema }, async (request, reply) => {
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
    const firstOutline = page.posts.find((post) => !isWhole(post));
    if (firstOutline === undefined || isWhole(firstOutline)) {
      // A page holding a large post whole (a search page) is written in parts, a slice at a
      // time: rendered and sent at once, its megabytes would hold the event loop for a turn.
      if (!page.posts.some((post) => isWhole(post) && post.content.length > CONTENT_PART_CHARACTERS)) {
        return sendJson(reply, serializer.page(page));
      }
      return reply.header("content-type", JSON_TYPE).send(pacedReadable(pageParts(page)));
    }
    // Large posts: room for the first is waited for before anything is sent, so that a busy
    // instance can still answer 503; the page is then written post by post (large-posts.ts).
    const first = await largePosts.read(firstOutline);
    if (first === "busy") return busy(reply);
    // Deleted since the page was listed: the page as listed can no longer be written; another will.
    if (first === undefined) return busy(reply);
    return reply.header("content-type", JSON_TYPE).send(largePosts.pageStream(page, first, reply.raw));
  });

  app.get(`${POSTS}/:id`, { schema: GetPostRouteSchema }, async (request, reply) => {
    const id = idParam(request);
    // A non-numeric id is a path that does not exist, not a post that does not.
    if (!isDigitId(id)) return sendEnvelope(reply, 404, { message: HTTP_MESSAGES.notFound });
    const result = await getPost(deps, id);
    if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
    const found = result.value;
    const tag = entityTags.post(found);
    if (holdsCurrent(request, tag)) {
      return tagged(reply, tag).header("cache-control", NO_CACHE).code(304).send();
    }
    if (isWhole(found)) {
      tagged(reply, tag).header("cache-control", NO_CACHE);
      return sendJson(reply, await serializer.post(found));
    }
    // A large post is read whole only once it fits in the budget, and holds its room until sent.
    const held = await largePosts.read(found);
    if (held === "busy") return busy(reply);
    if (held === undefined) return sendDomainError(reply, { kind: "post-not-found" }, sendEnvelope);
    // The version read whole, which may be newer than the outline's.
    tagged(reply, entityTags.post(held.post)).header("cache-control", NO_CACHE);
    return reply.header("content-type", JSON_TYPE).send(largePosts.postStream(held, reply.raw));
  });

  app.patch(
    `${POSTS}/:id`,
    { onRequest: [guards.requireDigitId, guards.requireUser], schema: PatchPostRouteSchema },
    async (request, reply) => {
      const body = jsonObjectBody(request.body);
      // A large content is written back in the answer: room for it is taken before anything
      // changes, so that a busy instance answers 503 while it still may.
      const bytes = largeContentBytes(body.content);
      const room = bytes === undefined ? undefined : await largePosts.room(bytes);
      if (bytes !== undefined && room === undefined) return busy(reply);
      const giveBack = room ?? (() => {});
      let result: Awaited<ReturnType<typeof patchPost>>;
      try {
        result = await patchPost(deps, {
          principal: authenticated(request),
          postId: idParam(request),
          title: body.title,
          content: body.content,
          expectedVersions: expectedVersions(request),
        });
      } catch (error) {
        giveBack();
        throw error;
      }
      if (!result.ok) {
        giveBack();
        return sendDomainError(reply, result.error, sendEnvelope);
      }
      const changed = result.value;
      if (isWhole(changed)) {
        reply.raw.once("close", giveBack);
        return sendJson(tagged(reply, entityTags.post(changed)), await serializer.post(changed));
      }
      // An outline: the change has committed, so from here on nothing answers 503.
      let held: HeldPost | "busy" | undefined;
      if (typeof body.content === "string") {
        // The content this change stored is the one it sent: the post at this version, exactly.
        const { contentBytes: _, ...post } = changed;
        held = { post: { ...post, content: body.content }, release: giveBack };
      } else {
        // Only the title changed: the content is read once it fits, waiting as long as it takes.
        const gone = new AbortController();
        reply.raw.once("close", () => gone.abort());
        held = await largePosts.readChanged(changed, gone.signal);
      }
      if (held === "busy") return reply; // the client is gone: no one to answer
      // Deleted since this change: the post is gone, as any request now finds it.
      if (held === undefined) return sendDomainError(reply, { kind: "post-not-found" }, sendEnvelope);
      // The version read, which is this change's unless a later one committed in between: its
      // ETag then names the later version, which the answer holds (docs/posts.md#large-posts).
      tagged(reply, entityTags.post(held.post));
      return reply.header("content-type", JSON_TYPE).send(largePosts.postStream(held, reply.raw));
    },
  );

  app.delete(
    `${POSTS}/:id`,
    { onRequest: [guards.requireDigitId, guards.requireUser], schema: DeletePostRouteSchema },
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
