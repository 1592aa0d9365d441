import { hasUserRole, type Principal } from "@posts/domain";
import type { FastifyRequest, onRequestHookHandler } from "fastify";
import type { SendEnvelope } from "../errors/error-envelope.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";
import { isDigitId } from "../schemas/common-schemas.js";

/** The onRequest guards of protected routes; both answer the 403 envelope. */
export interface RouteGuards {
  /** Lets through only a principal holding ROLE_USER: no token or another role → 403. */
  readonly requireUser: onRequestHookHandler;
  /**
   * Lets through only a `:id` of ASCII digits: the specification answers 403 to a PATCH
   * on a non-numeric id, because that path is not among the protected ones.
   */
  readonly requireDigitId: onRequestHookHandler;
}

/** Builds the guards of one app. They run after authentication, so an invalid token is 401 first. */
export function routeGuards(sendEnvelope: SendEnvelope): RouteGuards {
  return {
    requireUser: (request, reply, done) => {
      if (request.principal !== null && hasUserRole(request.principal)) {
        done();
        return;
      }
      sendEnvelope(reply, 403, { message: HTTP_MESSAGES.forbidden });
    },
    requireDigitId: (request, reply, done) => {
      if (isDigitId(idParam(request))) {
        done();
        return;
      }
      sendEnvelope(reply, 403, { message: HTTP_MESSAGES.forbidden });
    },
  };
}

/** The raw `:id` path parameter of a route that declares one. */
export function idParam(request: FastifyRequest): string {
  return (request.params as { readonly id?: string }).id ?? "";
}

/** The principal of a request that passed `requireUser`. */
export function authenticated(request: FastifyRequest): Principal {
  if (request.principal === null)
    throw new Error("route reached without a principal: is requireUser missing?");
  return request.principal;
}
