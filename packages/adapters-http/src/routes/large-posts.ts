import type { ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import { type Dependencies, isWhole, type Post, type PostOutline, type PostPage } from "@posts/domain";
import { waitUntil } from "../events/wait-until.js";
import { ByteBudget, type ByteBudgetStats } from "../http/byte-budget.js";
import { pacedReadable } from "../http/write-pacer.js";
import type { LargePostSettings } from "../http-app-options.js";
import type { PostSerializer } from "./post-serializer.js";

/**
 * 16 MiB: one post of the default `BODY_LIMIT`, or several smaller ones, at once. Each byte of
 * content is held about twice while it is read and written (the driver's message, then the
 * text), besides what the garbage collector has yet to free; more room than this serves no
 * faster, as reading and writing them is work for the one event loop.
 */
export const DEFAULT_LARGE_POST_BUDGET_BYTES = 16 * 1024 * 1024;
/** 10 s: long enough for the budget to serve a few hundred posts of 10 MB in turn. */
export const DEFAULT_LARGE_POST_WAIT_MS = 10_000;

/**
 * How many times a page that has begun, or the answer of a committed change, tries to read one
 * of its large posts: a failure there (no pooled connection in time, a statement timeout) can no
 * longer be answered 503 (the page is cut short, the change answered 500), so a passing one is
 * tried again first.
 */
const MID_PAGE_ATTEMPTS = 3;
/** How long a page waits before it tries a failed read again, in ms. */
const RETRY_AFTER_MS = 500;

/** A large post read whole within the budget; `release` gives its bytes back once it was sent. */
export interface HeldPost {
  readonly post: Post;
  readonly release: () => void;
}

/**
 * Reads posts that came as outlines within one process-wide {@link ByteBudget}, and writes pages
 * that hold some as a stream, post by post, each written once the socket took the previous one.
 */
export interface LargePosts {
  /**
   * `outline` read whole, once its bytes fit in the budget: "busy" when they did not within the
   * wait, `undefined` when the post is gone by then. The caller calls `release` once the answer
   * was sent (or abandoned).
   */
  read(outline: PostOutline): Promise<HeldPost | "busy" | undefined>;
  /**
   * Room for `bytes` of a post about to be written from what the request brought (a PATCH's
   * large content), taken before the change so that a busy instance refuses it first: the
   * function that gives it back, or `undefined`, having taken nothing, when it did not fit
   * within the wait.
   */
  room(bytes: number): Promise<(() => void) | undefined>;
  /**
   * `outline`, the answer of a change that has committed, read whole once its bytes fit, waiting
   * as long as that takes (a change must not be answered 503) and trying a failed read again:
   * "busy" only when `signal` aborted (the client is gone), `undefined` when the post is gone by
   * then. What is read may be a later version than the outline's; the caller compares `updatedAt`.
   */
  readChanged(outline: PostOutline, signal: AbortSignal): Promise<HeldPost | "busy" | undefined>;
  /**
   * The JSON of `page` as a stream, whose first large post `first` holds already (as `read`
   * answered it): each further large post is read when the stream gets to it, waiting for room
   * for as long as it takes (the answer has begun), and its bytes are given back once its last
   * part went to `response`. Written a slice at a time, each in a turn of the event loop the
   * write pacer grants, as `postStream`. A post deleted meanwhile ends the stream with an error:
   * the answer is cut short.
   */
  pageStream(page: PostPage, first: HeldPost, response: ServerResponse): Readable;
  /**
   * The JSON of `held`'s post as a stream, in parts (`PostSerializer.postParts`) written a slice
   * at a time, each in a turn of the event loop the write pacer grants; its room is given back
   * once `response` closes.
   */
  postStream(held: HeldPost, response: ServerResponse): Readable;
  /** What the budget holds and how many wait. */
  stats(): ByteBudgetStats;
}

/** The {@link LargePosts} of one app, reading whole posts from `deps.posts`. */
export function largePosts(
  deps: Pick<Dependencies, "posts">,
  serializer: PostSerializer,
  settings: LargePostSettings = {},
): LargePosts {
  const budget = new ByteBudget(settings.budgetBytes ?? DEFAULT_LARGE_POST_BUDGET_BYTES);
  const waitMs = settings.waitMs ?? DEFAULT_LARGE_POST_WAIT_MS;

  const readWithin = async (
    outline: PostOutline,
    options: { readonly timeoutMs?: number; readonly signal?: AbortSignal; readonly attempts?: number },
  ): Promise<HeldPost | "busy" | undefined> => {
    const release = await budget.take(outline.contentBytes, options);
    if (release === undefined) return "busy";
    try {
      const post = await findWhole(outline.id, options.attempts ?? 1, options.signal);
      if (post === undefined) {
        release();
        return undefined;
      }
      return { post, release };
    } catch (error) {
      release();
      throw error;
    }
  };

  const findWhole = async (id: number, attempts: number, signal: AbortSignal | undefined) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await deps.posts.findWhole(id);
      } catch (error) {
        if (attempt >= attempts || signal?.aborted) throw error;
        await waitUntil(() => undefined, { signal, timeoutMs: RETRY_AFTER_MS, otherwise: undefined });
      }
    }
  };

  return {
    read: (outline) => readWithin(outline, { timeoutMs: waitMs }),

    room: (bytes) => budget.take(bytes, { timeoutMs: waitMs }),

    readChanged: (outline, signal) => readWithin(outline, { signal, attempts: MID_PAGE_ATTEMPTS }),

    pageStream: (page, first, response) => {
      const gone = new AbortController();
      // Also when the stream was never read (the client left at once), so that its body never ran.
      const abandon = () => {
        gone.abort();
        first.release();
      };
      response.once("close", abandon);
      async function* chunks(): AsyncGenerator<Buffer> {
        // The first large post's room was taken before the answer began; each other's, in turn.
        let pending: HeldPost | undefined = first;
        let held: HeldPost | "busy" | undefined;
        try {
          yield serializer.pageStart();
          let index = 0;
          for (const listed of page.posts) {
            if (isWhole(listed)) {
              yield* serializer.pageItem(listed, index++);
              continue;
            }
            held =
              pending ?? (await readWithin(listed, { signal: gone.signal, attempts: MID_PAGE_ATTEMPTS }));
            pending = undefined;
            if (held === "busy") return; // aborted: the client is gone
            if (held === undefined) throw new Error(`post ${listed.id} was deleted while its page was sent`);
            yield* serializer.pageItem(held.post, index++);
            // Given back once its last part went to the response: with one part ahead at most
            // (the stream's backpressure), what the response may still buffer is a part or two.
            held.release();
            held = undefined;
          }
          yield serializer.pageEnd(page);
        } finally {
          if (typeof held === "object") held.release();
          first.release();
          response.off("close", abandon);
        }
      }
      // Paced, as `postStream`: a post of 10 MB handed to the socket in one turn holds every other
      // request for as long as the kernel takes to copy it. One slice ahead at most: a post is
      // read when the socket wants the next one.
      return pacedReadable(chunks());
    },

    postStream: (held, response) => {
      response.once("close", held.release);
      // Paced: a stream over the parts alone would render and hand the socket all of them in
      // one turn of the event loop while the socket takes them (a post of 16 MiB: 300 ms here).
      return pacedReadable(serializer.postParts(held.post));
    },

    stats: () => budget.stats(),
  };
}
