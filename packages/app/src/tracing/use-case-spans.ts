import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { type Span, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";

/**
 * The use case each API route runs, by `METHOD url` as Fastify registers it (HEAD answers as its
 * GET). Each handler parses the request, calls this one use case of `@posts/domain` and maps its
 * result, so its span is the use case's. A route missing here gets no use-case span; a test
 * holds this table to the routes the app really has.
 */
export const USE_CASE_OF_ROUTE: Readonly<Record<string, string>> = {
  "POST /api/v1/posts": "createPost",
  "GET /api/v1/posts": "listPosts",
  "GET /api/v1/posts/:id": "getPost",
  "PATCH /api/v1/posts/:id": "patchPost",
  "DELETE /api/v1/posts/:id": "deletePost",
  "GET /api/v1/posts/events": "readChangeEvents",
  "POST /api/v1/user": "registerUser",
  "POST /api/v1/user/login": "login",
  "GET /api/v1/user": "getMe",
  "DELETE /api/v1/user": "deleteAccount",
};

/** The use case a route runs, or `undefined` for a route that runs none (health, metrics, docs). */
export function useCaseOf(method: string, url: string): string | undefined {
  return USE_CASE_OF_ROUTE[`${method === "HEAD" ? "GET" : method} ${url}`];
}

/** The slice of a Fastify route's options this reads and rewrites (`onRoute`). */
interface RouteSlice {
  readonly method: string | readonly string[];
  readonly url: string;
  handler: (this: unknown, ...args: unknown[]) => unknown;
}

/** The slice of a Fastify instance this needs. */
interface FastifySlice {
  addHook(name: "onRoute", hook: (route: RouteSlice) => void): unknown;
}

/** Fastify publishes every new instance here, before any plugin or route is added. */
const INITIALIZATION = "fastify.initialization";

/**
 * From now on, every Fastify instance made in this process runs each API route's handler inside
 * a span named after its use case (`getPost`, `createPost`…), a child of the request's span and
 * the parent of the statements the use case runs. Fastify's documented `fastify.initialization`
 * channel is how: the HTTP adapter needs no option and, with traces off, nothing is registered
 * at all. Answers a function that stops wrapping the routes of instances made afterwards.
 *
 * Attributes: `code.function.name` (the use case). A handler that throws (an unexpected failure,
 * answered 5xx) leaves the span in error with the exception; a refusal of the use case is a
 * result, answered 4xx, and leaves it unset, as the request span records the status.
 */
export function traceUseCases(tracer: Tracer = trace.getTracer("@posts/app")): () => void {
  const onInitialization = (message: unknown) => {
    const { fastify } = message as { fastify: FastifySlice };
    fastify.addHook("onRoute", (route) => {
      const method = typeof route.method === "string" ? route.method : route.method[0];
      const useCase = method === undefined ? undefined : useCaseOf(method, route.url);
      if (useCase !== undefined) route.handler = withUseCaseSpan(tracer, useCase, route.handler);
    });
  };
  subscribe(INITIALIZATION, onInitialization);
  return () => unsubscribe(INITIALIZATION, onInitialization);
}

function withUseCaseSpan(
  tracer: Tracer,
  useCase: string,
  handler: RouteSlice["handler"],
): RouteSlice["handler"] {
  const attributes = { "code.function.name": useCase };
  return function useCaseSpan(this: unknown, ...args: unknown[]) {
    return tracer.startActiveSpan(useCase, { attributes }, async (span) => {
      try {
        return await handler.apply(this, args);
      } catch (error) {
        fail(span, error);
        throw error;
      } finally {
        span.end();
      }
    });
  };
}

function fail(span: Span, error: unknown): void {
  if (error instanceof Error) {
    span.recordException(error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  } else {
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
}
