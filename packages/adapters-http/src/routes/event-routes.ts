import type { ChangeEventLog } from "@posts/domain";
import type { FastifyPluginCallback, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { SendEnvelope } from "../errors/error-envelope.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";
import { ChangeFeedHub, type RenderedEvent } from "../events/change-feed-hub.js";
import type { CloudEventRenderer } from "../events/cloud-event.js";
import { EventStreams, MAX_HEARTBEAT_MS } from "../events/event-stream.js";
import { ChangeFeedRouteSchema } from "../schemas/event-route-schemas.js";

/** Options of {@link eventRoutes}. */
export interface EventRoutesOptions {
  readonly log: ChangeEventLog;
  readonly render: CloudEventRenderer;
  readonly sendEnvelope: SendEnvelope;
  /** Retry-After, in seconds, of the 503 answered to a stream asked for while the app closes. */
  readonly retryAfterSeconds: number;
  /** How often an open stream gets a comment line. Default and most 15 000 ms. */
  readonly heartbeatMs?: number;
  /** Told of a failed read of the log by the hub, which retries. */
  readonly onError?: (error: unknown) => void;
}

const EVENTS = "/api/v1/posts/events";
const DIGITS = /^[0-9]+$/;
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
const JSON_TYPE = "application/json; charset=utf-8";

const MESSAGES = {
  after: "after는 0 이상의 정수여야 합니다.",
  lastEventId: "Last-Event-ID는 0 이상의 정수여야 합니다.",
  limit: `limit는 1 이상 ${MAX_LIMIT} 이하의 정수여야 합니다.`,
  gone: (oldest: number) =>
    `보존 기간이 지난 이벤트는 남아 있지 않습니다. 가장 오래된 이벤트는 ${oldest}번입니다.`,
} as const;

/** A non-negative safe integer written in decimal digits, or undefined for anything else. */
function counting(value: unknown): number | undefined {
  if (typeof value !== "string" || !DIGITS.test(value)) return undefined;
  const number = Number(value);
  return Number.isSafeInteger(number) ? number : undefined;
}

function wantsStream(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  return request.method === "GET" && typeof accept === "string" && accept.includes("text/event-stream");
}

const plugin: FastifyPluginCallback<EventRoutesOptions> = (app, options, done) => {
  const { sendEnvelope, retryAfterSeconds } = options;
  const hub = new ChangeFeedHub({
    log: options.log,
    render: options.render,
    ...(options.onError === undefined ? {} : { onError: options.onError }),
  });
  const streams = new EventStreams(options.heartbeatMs ?? MAX_HEARTBEAT_MS);
  hub.start();
  // Before the server closes: open streams never end by themselves, and the close would wait for them.
  app.addHook("preClose", (next) => {
    streams.close();
    hub.stop();
    next();
  });

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

      if (!stream) {
        const from = after ?? 0;
        const events = await hub.read(from, limit, true);
        const oldest = events[0]?.number;
        if (oldest !== undefined && oldest !== from + 1) {
          return sendEnvelope(reply, 410, { message: MESSAGES.gone(oldest) });
        }
        const next = events.length === 0 ? from : (events.at(-1) as RenderedEvent).number;
        let list = "";
        for (const event of events) list += list === "" ? event.json : `,${event.json}`;
        return reply
          .header("content-type", JSON_TYPE)
          .header("cache-control", "no-cache")
          .send(`{"events":[${list}],"next":${next}}`);
      }

      // Read before the answer starts, so that a database that is down is a 503, not a broken stream.
      // The newest number also tells the hub how far the log goes, whatever it has heard so far.
      const last = await hub.lastNumber();
      const from = after ?? last;
      const first = await hub.read(from, 500, true);
      // The app began closing while the log was read, after this request passed the graceful
      // close's check: it gets here the 503 that check gives the requests arriving later.
      if (streams.closed) {
        reply.header("retry-after", String(retryAfterSeconds));
        return sendEnvelope(reply, 503, { message: HTTP_MESSAGES.unavailable });
      }
      reply.hijack();
      await streams.serve(reply.raw, reply.getHeaders() as Record<string, string>, hub, from, first);
    },
  );
  done();
};

/**
 * GET /api/v1/posts/events, the change feed of docs/change-events.md, over `options.log`: a JSON page
 * or, for `Accept: text/event-stream`, a stream that follows new events as the log's
 * subscription reports them. PATCH and DELETE on the path are the post routes' (a non-numeric
 * id). Closing the app ends the open streams first.
 */
export const eventRoutes = fp(plugin, { name: "posts-event-routes", fastify: "5.x" });
