import { Type } from "typebox";
import { envelopeResponse, errorJsonResponse } from "./responses.js";

const TAGS = ["operations"];
const Status = Type.Object({ status: Type.Literal("ok") }, { additionalProperties: false });
/** Operational routes read no token, but any path answers an invalid one with 401. */
const invalidToken = errorJsonResponse("X-AUTH-TOKEN present but invalid");

/** GET /health: liveness. */
export const HealthRouteSchema = {
  summary: "Liveness",
  tags: TAGS,
  response: { 200: Status, 401: invalidToken },
};

/** GET /ready: readiness, whether the database answers. */
export const ReadyRouteSchema = {
  summary: "Readiness: the database answers",
  tags: TAGS,
  response: { 200: Status, 401: invalidToken, 503: envelopeResponse("Not ready; see Retry-After") },
};

/** GET /metrics: Prometheus metrics. */
export const MetricsRouteSchema = {
  summary: "Prometheus metrics",
  tags: TAGS,
  response: {
    200: { description: "Prometheus text format", content: { "text/plain": { schema: Type.String() } } },
    401: invalidToken,
  },
};
