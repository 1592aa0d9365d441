import type { ServerResponse } from "node:http";
import { Transform, type TransformCallback } from "node:stream";
import type { FastifyPluginCallback, FastifyReply } from "fastify";
import fp from "fastify-plugin";
import { addBodyPreParsing } from "./body-routes.js";
import type { ByteBudget } from "./byte-budget.js";

/**
 * 64 KiB: a body larger than this waits for room in the budget of large bodies before it is read;
 * one within it never waits. The size above which the PostgreSQL adapter answers a post as an
 * outline, so that a request that carries such a content is the one that waits.
 */
export const LARGE_BODY_ABOVE_BYTES = 64 * 1024;

/** The `code` of the error a body's stream ends with when no room came within the wait. */
export const NO_ROOM_FOR_BODY = "POSTS_NO_ROOM_FOR_BODY";

/** Why a body was not read: no room in the budget of large bodies within the wait (503). */
class NoRoomForBody extends Error {
  readonly code = NO_ROOM_FOR_BODY;
  // Kept by Fastify's body reader, which makes any other stream error a 400.
  readonly statusCode = 503;

  constructor() {
    super("no room for a large request body within the wait");
  }
}

/** Options of {@link largeBodies}. */
export interface LargeBodiesOptions {
  /** The process-wide budget of large bodies' bytes (not the one of large posts' reads). */
  readonly budget: ByteBudget;
  /** How long a body waits for room before the request is answered 503, in ms. */
  readonly waitMs: number;
  /** The app's body limit: a declared length above it is refused (413) without taking room. */
  readonly bodyLimit: number;
  /** Answers 503 with Retry-After: the envelope of a request refused before its body was read. */
  readonly busy: (reply: FastifyReply) => void;
}

/** Gives `release` back once `response` is done (sent, or its connection gone). */
function releaseOnClose(response: ServerResponse, release: () => void): void {
  if (response.closed) release();
  else response.once("close", release);
}

/** A signal that aborts once `response` closes: a waiter whose client left stops waiting. */
function closedSignal(response: ServerResponse): AbortSignal {
  const gone = new AbortController();
  if (response.closed) gone.abort();
  else response.once("close", () => gone.abort());
  return gone.signal;
}

/**
 * `payload` as it arrives, counted: once more than {@link LARGE_BODY_ABOVE_BYTES} has come, the
 * next chunk is passed on only when `take` got room (reading stops meanwhile, so the client's
 * sending does too); when it got none, the stream ends with {@link NoRoomForBody}.
 */
function roomOnceLarge(
  payload: NodeJS.ReadableStream,
  take: () => Promise<boolean>,
): Transform & { receivedEncodedLength: number } {
  let held = false;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      counted.receivedEncodedLength += chunk.length;
      if (held || counted.receivedEncodedLength <= LARGE_BODY_ABOVE_BYTES) {
        callback(null, chunk);
        return;
      }
      take().then(
        (granted) => {
          held = granted;
          callback(granted ? null : new NoRoomForBody(), granted ? chunk : undefined);
        },
        (error: unknown) => callback(error as Error),
      );
    },
  }) as Transform & { receivedEncodedLength: number };
  // What Fastify's body reader checks against the body limit, as it does for its own stream.
  counted.receivedEncodedLength = 0;
  // Not `pipeline`: an error of the counted stream would destroy the request, and its socket
  // with it, before the 503 is written. The request's own errors (the client left) end the read.
  payload.on("error", (error) => counted.destroy(error));
  payload.pipe(counted);
  return counted;
}

const plugin: FastifyPluginCallback<LargeBodiesOptions> = (app, options, done) => {
  const { budget, waitMs, bodyLimit, busy } = options;
  // Resolves once `bytes` are held for the request, given back when its response is done.
  const take = async (bytes: number, response: ServerResponse): Promise<boolean> => {
    const release = await budget.take(bytes, { timeoutMs: waitMs, signal: closedSignal(response) });
    if (release === undefined) return false;
    releaseOnClose(response, release);
    return true;
  };

  // preParsing: after the checks that refuse a request before its body (401, 403, 404, 415).
  addBodyPreParsing(app, (request, reply, payload, next) => {
    if (request.headers["transfer-encoding"] !== undefined) {
      // Its size is known only at its end: once large, it takes room for the most a body may be.
      next(
        null,
        roomOnceLarge(payload, () => take(bodyLimit, reply.raw)),
      );
      return;
    }
    const length = Number(request.headers["content-length"]);
    // Over the limit, Fastify refuses it (413) without reading it.
    if (!(length > LARGE_BODY_ABOVE_BYTES && length <= bodyLimit)) {
      next(null, payload);
      return;
    }
    take(length, reply.raw).then(
      (granted) => {
        if (!granted) {
          busy(reply);
          return;
        }
        // `expectContinue` left asking for a large body to this point: it has room now.
        if (/\b100-continue\b/i.test(request.headers.expect ?? "")) reply.raw.writeContinue();
        next(null, payload);
      },
      (error: unknown) => next(error as Error),
    );
  });
  done();
};

/**
 * Bounds the bytes of large request bodies held at once over the process: a body whose
 * `Content-Length` is over {@link LARGE_BODY_ABOVE_BYTES} (and within the body limit) waits for
 * room for that many bytes before a byte of it is read (and, when the client expects it, before
 * `100 Continue` asks for it); a chunked one is read until it passes that size, then waits for
 * room for the body limit. Room comes in the order asked (`ByteBudget`)
 * and is held until the response is done, so it covers the body, its parsed text and the
 * statement that stores it. No room within `waitMs`: 503 with Retry-After (an error with code
 * {@link NO_ROOM_FOR_BODY} for a chunked body, which the error handler answers so), before the
 * route runs, so nothing changed. A body within the threshold never waits.
 */
export const largeBodies = fp(plugin, { name: "posts-large-bodies", fastify: "5.x" });
