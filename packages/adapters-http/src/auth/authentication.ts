import type { Principal } from "@posts/domain";
import type { FastifyPluginAsync } from "fastify";
import fp from "fastify-plugin";
import { sendErrorJson } from "../errors/error-envelope.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";
import { JwtKeyRing } from "./jwt-key-ring.js";
import { tokenVerifier } from "./token-verifier.js";

declare module "fastify" {
  interface FastifyRequest {
    /** Who the request's `X-AUTH-TOKEN` names; `null` when it carries none (anonymous). */
    principal: Principal | null;
  }
}

/** The header that carries the JWT, as Node lower-cases it. */
export const TOKEN_HEADER = "x-auth-token";

/** Options of {@link authentication}: the HS256 keys and the issuer tokens must name. */
export interface AuthenticationOptions {
  /** The key tokens are signed with now; it verifies the tokens that name it, and those that name none before the previous keys. */
  readonly secret: string;
  /** Keys of a rotation in progress, whose unexpired tokens are still accepted. */
  readonly previousSecrets?: readonly string[];
  readonly issuer: string;
}

const plugin: FastifyPluginAsync<AuthenticationOptions> = async (app, options) => {
  // Verify-only: tokens are signed by JwtTokenIssuer, outside any request.
  const verify = await tokenVerifier(
    app,
    new JwtKeyRing(options.secret, options.previousSecrets),
    options.issuer,
  );
  app.decorateRequest("principal", null);
  // onRequest runs before the body is read, so a bad token is refused before 415, 413 or 400,
  // and on every path, including unknown ones (docs/authentication.md#invalid-tokens-401-on-every-path).
  app.addHook("onRequest", (request, reply, next) => {
    const header = request.headers[TOKEN_HEADER];
    if (header === undefined || header === "") {
      next();
      return;
    }
    // A header sent twice reaches us as an array (or joined with ", ", which fails to parse).
    const verdict = typeof header === "string" ? verify(header) : undefined;
    if (verdict?.valid === true) {
      request.principal = verdict.principal;
      next();
      return;
    }
    sendErrorJson(
      reply,
      401,
      verdict?.expired === true ? HTTP_MESSAGES.expiredToken : HTTP_MESSAGES.invalidToken,
    );
  });
};

/**
 * Authenticates every request from its `X-AUTH-TOKEN` header alone (a token in the query
 * string or a cookie is ignored), with @fastify/jwt: absent or empty → anonymous
 * (`request.principal === null`); a valid token, signed with the key its `kid` names among
 * `secret` and `previousSecrets` (without a `kid`: with `secret`, or one of `previousSecrets`)
 * → `request.principal`; anything else, on any path → 401 `{"error": "..."}` before any other
 * check. Whether the principal may do what it asks is the route's business (see `requireUser`).
 */
export const authentication = fp(plugin, { name: "posts-authentication", fastify: "5.x" });
