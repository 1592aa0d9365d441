import type { ChangeEventLog } from "@posts/domain";
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { SendEnvelope } from "../errors/error-envelope.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";
import { ChangeFeedHub } from "../events/change-feed-hub.js";
import type { CloudEventRenderer } from "../events/cloud-event.js";
import type { EventFeedStats } from "../events/event-feed-stats.js";
import { DEFAULT_STALL_MS, EventStreams, MAX_HEARTBEAT_MS } from "../events/event-stream.js";
import { byteLengthOf, encodeInSlices } from "../events/feed-message.js";
import { FeedReaders } from "../events/feed-readers.js";
import { type StreamCapSettings, StreamCaps } from "../events/stream-caps.js";
import { acceptsEventStream } from "../http/event-stream-negotiation.js";
import { pacedReadable, WRITE_SLICE_BYTES } from "../http/write-pacer.js";
import { ChangeFeedRouteSchema } from "../schemas/event-route-schemas.js";

/** Options of {@link eventRoutes}. */
export interface EventRoutesOptions {
  readonly log: ChangeEventLog;
  readonly render: CloudEventRenderer;
  readonly sendEnvelope: SendEnvelope;
  /**
   * Retry-After, in seconds, of the 503 answered to a stream asked for while the app closes, and
   * of the 429 answered to one past a cap.
   */
  readonly retryAfterSeconds: number;
  /** How often an open stream gets a comment line. Default and most 15 000 ms. */
  readonly heartbeatMs?: number;
  /** The caps on open streams; past one, a stream is refused (429). Absent: no cap. */
  readonly caps?: StreamCapSettings;
  /** How long a stream's or a page's client may leave what it was sent untaken before it is disconnected, in ms. */
  readonly stallMs?: number;
  /** Told of a failed read of the log by the hub, which retries. */
  readonly onError?: (error: unknown) => void;
  /** Given, once, the function that reads the feed's {@link EventFeedStats} (for GET /metrics). */
  readonly exposeStats?: (read: () => EventFeedStats) => void;
}

const EVENTS = "/api/v1/posts/events";
const DIGITS = /^[0-9]+$/;
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
const JSON_TYPE = "application/json; charset=utf-8";
/** A JSON page stops, after its first event, once its events hold this many bytes of JSON. */
export const PAGE_MAX_BYTES = 1024 * 1024;
// Replays and JSON pages reading the log at once, each holding one batch or page: a few, so that
// they never take every connection of the pool nor much memory, and waiting ones cost nothing.
const LOG_READERS = 4;

const MESSAGES = {
  after: "after는 0 이상의 정수여야 합니다.",
  lastEventId: "Last-Event-ID는 0 이상의 정수여야 합니다.",
  limit: `limit는 1 이상 ${MAX_LIMIT} 이하의 정수여야 합니다.`,
  gone: (oldest: number) =>
    `보존 기간이 지난 이벤트는 남아 있지 않습니다. 가장 오래된 이벤트는 ${oldest}번입니다.`,
} as const;

/** A JSON page of the feed as read: its body's chunks, or the oldest event kept when it starts before it. */
type PageRead =
  | { readonly body: readonly Buffer[]; readonly byteLength: number }
  | { readonly oldest: number };

/** A non-negative safe integer written in decimal digits, or undefined for anything else. */
function counting(value: unknown): number | undefined {
  if (typeof value !== "string" || !DIGITS.test(value)) return undefined;
  const number = Number(value);
  return Number.isSafeInteger(number) ? number : undefined;
}

/**
 * Ends the page's turn (`release`) once its client has taken the page or gone, and disconnects a
 * client that has not taken it within `stallMs`.
 */
function holdUntilTaken(reply: FastifyReply, release: () => void, stallMs: number): void {
  const response = reply.raw;
  const timer = setTimeout(() => {
    if (!response.writableFinished) response.destroy();
  }, stallMs);
  timer.unref();
  response.once("close", () => {
    clearTimeout(timer);
    release();
  });
}

function wantsStream(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  return request.method === "GET" && acceptsEventStream(typeof accept === "string" ? accept : undefined);
}

const plugin: FastifyPluginCallback<EventRoutesOptions> = (app, options, done) => {
  const { sendEnvelope, retryAfterSeconds } = options;
  const hub = new ChangeFeedHub({
    log: options.log,
    render: options.render,
    ...(options.onError === undefined ? {} : { onError: options.onError }),
  });
  const streams = new EventStreams({
    heartbeatMs: options.heartbeatMs ?? MAX_HEARTBEAT_MS,
    ...(options.stallMs === undefined ? {} : { stallMs: options.stallMs }),
  });
  const readers = new FeedReaders(LOG_READERS);
  const caps = new StreamCaps(
    options.caps ?? { maxStreams: Number.POSITIVE_INFINITY, maxStreamsPerAddress: Number.POSITIVE_INFINITY },
  );
  const stallMs = options.stallMs ?? DEFAULT_STALL_MS;
  options.exposeStats?.(() => {
    const { open, bufferedBytes, stalled } = streams.stats();
    const { active, waiting, waited } = readers.stats();
    return {
      streams: open,
      bufferedBytes,
      stalled,
      readersActive: active,
      readersWaiting: waiting,
      readersWaited: waited,
    };
  });
  hub.start();
  // Before the server closes: open streams never end by themselves, and the close would wait for them.
  app.addHook("preClose", (next) => {
    streams.close();
    hub.stop();
    next();
  });

  const readPage = async (from: number, limit: number): Promise<PageRead> => {
    const events = await options.log.readAfter(from, limit, PAGE_MAX_BYTES);
    const oldest = events[0]?.number;
    if (oldest !== undefined && oldest !== from + 1) return { oldest };
    // The log bounds the text of the posts; the page stops at its rendered bytes, which are more.
    // The events are encoded one by one, a large content a slice at a time, and the page is their
    // slices, never joined (encodeInSlices says why): never the whole page as text either.
    const body: Buffer[] = [];
    let bytes = 0;
    let next = from;
    for (const event of events) {
      if (bytes >= PAGE_MAX_BYTES) break;
      const opening = body.length === 0 ? '{"events":[' : ",";
      const json = await encodeInSlices(event, options.render, opening, "");
      body.push(...json);
      bytes += byteLengthOf(json) - opening.length;
      next = event.number;
    }
    body.push(Buffer.from(`${body.length === 0 ? '{"events":[' : ""}],"next":${next}}`));
    return { body, byteLength: byteLengthOf(body) };
  };
  // The pages being read, by where they start and their limit: the same page asked for while it
  // is read waits for that read instead of reading and rendering the same megabytes again, and
  // its answer is the same bytes. Only while it is read: a page read earlier may lack new events.
  const pagesBeingRead = new Map<string, Promise<PageRead>>();

  // One page, read during one of the readers' turns, held until the client has taken the page:
  // pages of large posts asked for at once wait in line instead of each holding megabytes.
  const sendPage = async (reply: FastifyReply, from: number, limit: number) => {
    const gone = new AbortController();
    reply.raw.once("close", () => gone.abort());
    const key = `${from}/${limit}`;
    let release: (() => void) | undefined;
    let read = pagesBeingRead.get(key);
    if (read === undefined) {
      release = await readers.take(gone.signal);
      // The client went while the page waited for its turn: nobody to answer.
      if (release === undefined) return reply.hijack();
      read = pagesBeingRead.get(key);
      if (read === undefined) {
        const own = readPage(from, limit);
        const forget = () => {
          if (pagesBeingRead.get(key) === own) pagesBeingRead.delete(key);
        };
        own.then(forget, forget);
        pagesBeingRead.set(key, own);
        read = own;
      } else {
        // The same page began to be read while this one waited: its turn is not needed.
        release();
        release = undefined;
      }
    }
    let sent = false;
    try {
      const page = await read;
      if ("oldest" in page) return sendEnvelope(reply, 410, { message: MESSAGES.gone(page.oldest) });
      // The client went while the page was read: nobody to answer, and no close to wait for.
      if (gone.signal.aborted) return reply.hijack();
      holdUntilTaken(reply, release ?? (() => {}), stallMs);
      sent = true;
      // A page of megabytes goes a slice at a time, so that it is never one turn of the event
      // loop spent copying it into the socket; its length is known, and said.
      return reply
        .header("content-type", JSON_TYPE)
        .header("cache-control", "no-cache")
        .header("content-length", page.byteLength)
        .send(page.byteLength > WRITE_SLICE_BYTES ? pacedReadable(page.body) : Buffer.concat(page.body));
    } finally {
      if (!sent) release?.();
    }
  };

  app.get(
    EVENTS,
    {
      schema: ChangeFeedRouteSchema,
    },
    async (request, reply) => {
      const query = request.query as Readonly<Record<string, unknown>>;
      const stream = wantsStream(request);
      const lastEventId = request.headers["last-event-id"];
      let after: number | undefined;
      if (stream && lastEventId !== undefined) {
        // A reconnecting EventSource sends the URL it first used, ?after= included: the id wins.
        after = counting(lastEventId);
        if (after === undefined) return sendEnvelope(reply, 400, { message: MESSAGES.lastEventId });
      } else if (query.after !== undefined) {
        after = counting(query.after);
        if (after === undefined) return sendEnvelope(reply, 400, { message: MESSAGES.after });
      }
      let limit = DEFAULT_LIMIT;
      if (query.limit !== undefined) {
        const asked = counting(query.limit);
        if (asked === undefined || asked < 1 || asked > MAX_LIMIT) {
          return sendEnvelope(reply, 400, { message: MESSAGES.limit });
        }
        limit = asked;
      }

      if (!stream) return sendPage(reply, after ?? 0, limit);

      const admission = caps.admit(request.ip);
      if (typeof admission === "string") {
        reply.header("retry-after", String(retryAfterSeconds));
        return sendEnvelope(reply, 429, { message: HTTP_MESSAGES.tooManyStreams });
      }
      try {
        // Read before the answer starts, so that a database that is down is a 503, not a broken
        // stream. The newest number also tells the hub how far the log goes, whatever it has heard.
        const last = await hub.lastNumber();
        // The app began closing while the log was read, after this request passed the graceful
        // close's check: it gets here the 503 that check gives the requests arriving later.
        if (streams.closed) {
          reply.header("retry-after", String(retryAfterSeconds));
          return sendEnvelope(reply, 503, { message: HTTP_MESSAGES.unavailable });
        }
        reply.hijack();
        await streams.serve(
          reply.raw,
          reply.getHeaders() as Record<string, string>,
          { hub, readers },
          after ?? last,
        );
      } finally {
        admission();
      }
    },
  );

  done();
};

/**
 * GET /api/v1/posts/events, the change feed of docs/change-events.md, over `options.log`: a JSON
 * page (stopping, after its first event, at {@link PAGE_MAX_BYTES}) or, for
 * `Accept: text/event-stream`, a stream that follows new events as the log's subscription reports
 * them, refused with 429 past `options.caps`. Replays and pages read the log a few at a time,
 * each holding what it read until its client has taken it. PATCH and DELETE on the path are the
 * post routes' (a non-numeric id). Closing the app ends the open streams first.
 */
export const eventRoutes = fp(plugin, { name: "posts-event-routes", fastify: "5.x" });
