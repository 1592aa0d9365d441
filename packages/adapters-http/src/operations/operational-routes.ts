import type { FastifyPluginCallback } from "fastify";
import { Type } from "typebox";
import type { SendEnvelope } from "../errors/error-envelope.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";
import { envelopeResponse, errorJsonResponse } from "../schemas/error-schemas.js";

/** Options of {@link operationalRoutes}. */
export interface OperationalRoutesOptions {
  readonly sendEnvelope: SendEnvelope;
  readonly checkReady?: () => Promise<void>;
  readonly retryAfterSeconds: number;
}

const Status = Type.Object({ status: Type.Literal("ok") }, { additionalProperties: false });
const TAGS = ["operations"];

/**
 * GET /health: 200 `{"status":"ok"}` while the process serves requests (liveness).
 * GET /ready: 200 `{"status":"ok"}` when `checkReady` resolves (or is not given), else the
 * 503 envelope with Retry-After (readiness: take the instance out of rotation, don't kill it).
 */
export const operationalRoutes: FastifyPluginCallback<OperationalRoutesOptions> = (app, options, done) => {
  const { sendEnvelope, checkReady, retryAfterSeconds } = options;
  const invalidToken = errorJsonResponse("X-AUTH-TOKEN present but invalid");

  app.get(
    "/health",
    { schema: { summary: "Liveness", tags: TAGS, response: { 200: Status, 401: invalidToken } } },
    async () => ({ status: "ok" }) as const,
  );

  app.get(
    "/ready",
    {
      schema: {
        summary: "Readiness: the database answers",
        tags: TAGS,
        response: { 200: Status, 401: invalidToken, 503: envelopeResponse("Not ready; see Retry-After") },
      },
    },
    async (request, reply) => {
      try {
        await checkReady?.();
      } catch (error) {
        request.log.warn({ err: error }, "readiness check failed");
        reply.header("retry-after", String(retryAfterSeconds));
        return sendEnvelope(reply, 503, { message: HTTP_MESSAGES.notReady });
      }
      return { status: "ok" } as const;
    },
  );
  done();
};
