import type { FastifyPluginCallback } from "fastify";
import type { SendEnvelope } from "../errors/error-envelope.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";
import { HealthRouteSchema, ReadyRouteSchema } from "../schemas/operational-route-schemas.js";

/** Options of {@link operationalRoutes}. */
export interface OperationalRoutesOptions {
  readonly sendEnvelope: SendEnvelope;
  readonly checkReady?: () => Promise<void>;
  readonly retryAfterSeconds: number;
}

/**
 * GET /health: 200 `{"status":"ok"}` while the process serves requests (liveness).
 * GET /ready: 200 `{"status":"ok"}` when `checkReady` resolves (or is not given), else the
 * 503 envelope with Retry-After (readiness: take the instance out of rotation, don't kill it).
 */
export const operationalRoutes: FastifyPluginCallback<OperationalRoutesOptions> = (app, options, done) => {
  const { sendEnvelope, checkReady, retryAfterSeconds } = options;

  app.get("/health", { schema: HealthRouteSchema }, async () => ({ status: "ok" }) as const);

  app.get("/ready", { schema: ReadyRouteSchema }, async (request, reply) => {
    try {
      await checkReady?.();
    } catch (error) {
      request.log.warn({ err: error }, "readiness check failed");
      reply.header("retry-after", String(retryAfterSeconds));
      return sendEnvelope(reply, 503, { message: HTTP_MESSAGES.notReady });
    }
    return { status: "ok" } as const;
  });
  done();
};
