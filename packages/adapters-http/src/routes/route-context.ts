import type { Dependencies } from "@posts/domain";
import type { FastifyRequest } from "fastify";
import type { RouteGuards } from "../auth/route-guards.js";
import type { SendEnvelope } from "../errors/error-envelope.js";
import type { TimestampFormatter } from "../http/timestamp-formatter.js";
import type { LargePosts } from "./large-posts.js";
import type { PostEntityTags } from "./post-entity-tags.js";
import type { PostSerializer } from "./post-serializer.js";

/** What every route plugin of one app shares, built once by `buildHttpApp`. */
export interface RouteContext {
  readonly deps: Dependencies;
  readonly format: TimestampFormatter;
  readonly sendEnvelope: SendEnvelope;
  readonly guards: RouteGuards;
  readonly entityTags: PostEntityTags;
  /** The JSON of every answer that carries a post or a page. */
  readonly serializer: PostSerializer;
  /** Posts too large to read beside others, read within one budget; pages of them written as streams. */
  readonly largePosts: LargePosts;
  /** Retry-After, in seconds, of 503 answers. */
  readonly retryAfterSeconds: number;
}

/**
 * The absolute URL of `path` on this server, as the client reached it: scheme and host come
 * from the request (and from X-Forwarded-Proto / X-Forwarded-Host only when `trustProxy` says so).
 */
export function absoluteUrl(request: FastifyRequest, path: string): string {
  return `${request.protocol}://${request.host || "localhost"}${path}`;
}
