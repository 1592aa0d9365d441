import { deleteAccount, getMe, login, registerUser, validateCredentials } from "@posts/domain";
import type { FastifyPluginCallback, FastifyReply } from "fastify";
import type { FailureThrottles } from "../auth/failure-throttle.js";
import { authenticated } from "../auth/route-guards.js";
import { sendDomainError } from "../errors/domain-error-responses.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";
import { jsonObjectBody } from "../http/json-object-validator-compiler.js";
import {
  DeleteAccountRouteSchema,
  LoginRouteSchema,
  ReadAccountRouteSchema,
  RegisterRouteSchema,
} from "../schemas/user-route-schemas.js";
import { absoluteUrl, type RouteContext } from "./route-context.js";
import { toUserJson } from "./user-serializer.js";

const USER = "/api/v1/user";

/** Options of {@link userRoutes}. */
export interface UserRoutesOptions extends RouteContext {
  readonly throttles: FailureThrottles;
}

/**
 * The users resource (docs/authentication.md): register, log in, read and delete one's own account.
 * Failed logins, and registrations refused as duplicates, are throttled (see `failureThrottles`).
 */
export const userRoutes: FastifyPluginCallback<UserRoutesOptions> = (app, options, done) => {
  const { deps, format, sendEnvelope, guards, throttles } = options;

  const refuse = (reply: FastifyReply, waitSeconds: number) =>
    sendEnvelope(reply.header("retry-after", String(waitSeconds)), 429, {
      message: HTTP_MESSAGES.tooManyAttempts,
    });

  app.post(
    USER,
    { schema: RegisterRouteSchema },
    // Bad input → 400, never counted nor refused: it tells nothing about accounts. A throttled
    // address → 429, even for an email that is free: a 201 would tell it the email was free.
    // A duplicate → 409, counted against the address. Else 201.
    async (request, reply) => {
      const body = jsonObjectBody(request.body);
      const credentials = validateCredentials(body.email, body.password);
      if (!credentials.ok) return sendDomainError(reply, credentials.error, sendEnvelope);
      const wait = await throttles.registration.waitSeconds(request);
      if (wait > 0) return refuse(reply, wait);
      const result = await registerUser(deps, credentials.value);
      if (!result.ok) {
        await throttles.registration.recordFailure(request);
        return sendDomainError(reply, result.error, sendEnvelope);
      }
      return reply
        .code(201)
        .header("location", absoluteUrl(request, USER))
        .send(toUserJson(result.value, format));
    },
  );

  app.post(`${USER}/login`, { schema: LoginRouteSchema }, async (request, reply) => {
    const wait = await throttles.login.waitSeconds(request);
    if (wait > 0) return refuse(reply, wait);
    const body = jsonObjectBody(request.body);
    const result = await login(deps, { email: body.email, password: body.password });
    if (!result.ok) {
      // Only a 401 is a failed attempt; a 400 for bad input tells nothing about an account.
      if (result.error.kind === "invalid-credentials") await throttles.login.recordFailure(request);
      return sendDomainError(reply, result.error, sendEnvelope);
    }
    // A token must not sit in a shared cache (RFC 6749 §5.1).
    return reply.header("cache-control", "no-store").send({
      tokenType: "Bearer",
      token: result.value.token,
      expiresIn: result.value.expiresInMs,
    });
  });

  app.get(USER, { onRequest: guards.requireUser, schema: ReadAccountRouteSchema }, async (request, reply) => {
    const result = await getMe(deps, authenticated(request));
    if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
    return reply.send(toUserJson(result.value, format));
  });

  app.delete(
    USER,
    { onRequest: guards.requireUser, schema: DeleteAccountRouteSchema },
    async (request, reply) => {
      const result = await deleteAccount(deps, authenticated(request));
      if (!result.ok) return sendDomainError(reply, result.error, sendEnvelope);
      return reply.code(204).send();
    },
  );

  done();
};
