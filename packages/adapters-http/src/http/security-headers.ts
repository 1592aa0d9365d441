import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyPluginCallback } from "fastify";
import fp from "fastify-plugin";
import helmet from "helmet";

/**
 * Helmet configured for a JSON API (OWASP REST Security Cheat Sheet): a Content-Security-Policy
 * that allows nothing (`default-src 'none'; frame-ancestors 'none'`), Strict-Transport-Security,
 * `X-Content-Type-Options: nosniff` and `X-Frame-Options: DENY`. The headers that only matter to
 * HTML documents are left out: every header costs time on every response.
 */
const API_HELMET = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
  },
  xFrameOptions: { action: "deny" },
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  originAgentCluster: false,
  referrerPolicy: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
});

/**
 * The headers {@link API_HELMET} sets, computed once: with static options they do not depend on
 * the request, while helmet's Fastify plugin would rebuild its middleware on every request.
 */
export function helmetHeaders(): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : String(value);
    },
    removeHeader() {},
  };
  API_HELMET({} as IncomingMessage, response as unknown as ServerResponse, (error?: unknown) => {
    if (error !== undefined) throw error;
  });
  return headers;
}

const plugin: FastifyPluginCallback = (app, _options, done) => {
  const headers = helmetHeaders();
  app.addHook("onRequest", (_request, reply, next) => {
    reply.headers(headers);
    next();
  });
  done();
};

/**
 * Adds the API's security headers (see {@link helmetHeaders}) to every response, errors
 * included. A route may override one: Swagger UI sets its own Content-Security-Policy on /docs.
 */
export const securityHeaders = fp(plugin, { name: "posts-security-headers", fastify: "5.x" });
