import { Type } from "typebox";
import { StatusSchema } from "./components.js";
import { envelopeResponse, errorJsonResponse, jsonResponse, retryLaterResponse } from "./responses.js";
import { PUBLIC } from "./security.js";

const TAGS = ["operations"];
const invalidToken = errorJsonResponse("X-AUTH-TOKEN present but invalid");
const failures = {
  500: envelopeResponse("Unexpected failure; carries no internal detail"),
  503: retryLaterResponse("The instance is shutting down; see Retry-After"),
};

/** GET /health: liveness. */
export const HealthRouteSchema = {
  operationId: "getHealth",
  summary: "Liveness",
  tags: TAGS,
  security: PUBLIC,
  response: {
    200: jsonResponse("The process serves requests", StatusSchema),
    401: invalidToken,
    ...failures,
  },
};

/** GET /ready: readiness, whether the database answers. */
export const ReadyRouteSchema = {
  operationId: "getReadiness",
  summary: "Readiness: the database answers",
  tags: TAGS,
  security: PUBLIC,
  response: {
    200: jsonResponse("Ready", StatusSchema),
    401: invalidToken,
    ...failures,
    503: retryLaterResponse("Not ready (the database does not answer), or shutting down; see Retry-After"),
  },
};

/** GET /metrics: Prometheus metrics. */
export const MetricsRouteSchema = {
  operationId: "getMetrics",
  summary: "Prometheus metrics",
  tags: TAGS,
  security: PUBLIC,
  response: {
    200: { description: "Prometheus text format", content: { "text/plain": { schema: Type.String() } } },
    401: invalidToken,
    ...failures,
  },
};
