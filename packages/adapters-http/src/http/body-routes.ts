import type { FastifyInstance, HTTPMethods, preParsingHookHandler } from "fastify";

/** The methods whose bodies Fastify never reads (its `handleRequest` answers them unparsed). */
const BODYLESS = new Set<string>(["GET", "HEAD", "TRACE"]);

/**
 * Adds `hook` as a preParsing hook of every route registered after this call whose method has a
 * body Fastify reads (not GET, HEAD or TRACE), after the route's own preParsing hooks and those
 * added before. Why not `app.addHook("preParsing")`: a hook added that way runs for every request,
 * GETs included, whose bodies are never read, and its turn is paid by every read; a route without
 * preParsing hooks skips the step altogether. A request no route matches never reaches its body
 * (`notFoundBeforeBody` answers it first), so no route-less hook is lost.
 */
export function addBodyPreParsing(app: FastifyInstance, hook: preParsingHookHandler): void {
  app.addHook("onRoute", (route) => {
    const methods: readonly HTTPMethods[] = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.every((method) => BODYLESS.has(method.toUpperCase()))) return;
    const own = route.preParsing;
    route.preParsing = own === undefined ? [hook] : [...(Array.isArray(own) ? own : [own]), hook];
  });
}
