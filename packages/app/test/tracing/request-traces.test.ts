import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { postgresForTests } from "@posts/adapters-postgres/testing/postgres-for-tests";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTracing, type Tracing } from "../../src/tracing/start-tracing.js";
import { USE_CASE_OF_ROUTE } from "../../src/tracing/use-case-spans.js";
import type { InProcessService } from "../reliability/in-process-service.js";

// Nothing that loads pg or builds Fastify is imported above (postgres-for-tests is kept free of
// pg for this): tracing starts first, in beforeAll, as main.ts starts it before serve.js, and the
// service's modules are imported after it.

const PASSWORD = "a password that no span may carry";
const TITLE = "a title that no span may carry";
const CONTENT = "a content that no span may carry";

describeNeeding(await postgresForTests(), "traces of requests (in-memory exporter, PostgreSQL)", () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let service: InProcessService;
  let closeDatabase: () => Promise<void>;
  let token: string;
  let postId: number;
  /** `METHOD url` of every route the app registered, HEAD aside. */
  const routes: string[] = [];
  const collectRoutes = (message: unknown) => {
    const { fastify } = message as {
      fastify: {
        addHook(name: "onRoute", hook: (route: { method: string | string[]; url: string }) => void): void;
      };
    };
    fastify.addHook("onRoute", (route) => {
      for (const method of [route.method].flat())
        if (method !== "HEAD") routes.push(`${method} ${route.url}`);
    });
  };

  beforeAll(async () => {
    tracing = startTracing({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    subscribe("fastify.initialization", collectRoutes);
    const { openTestDatabase } = await import("@posts/adapters-postgres/testing");
    const { startInProcessService } = await import("../reliability/in-process-service.js");
    const database = await openTestDatabase("postgres");
    closeDatabase = () => database.close();
    service = await startInProcessService({ DATABASE_URL: database.connectionString });
    unsubscribe("fastify.initialization", collectRoutes);

    const email = `traced-${Date.now()}@example.com`;
    expect((await send("POST", "/api/v1/user", { email, password: PASSWORD })).status).toBe(201);
    const login = await send("POST", "/api/v1/user/login", { email, password: PASSWORD });
    token = ((await login.json()) as { token: string }).token;
    const created = await send("POST", "/api/v1/posts", { title: TITLE, content: CONTENT }, token);
    expect(created.status).toBe(201);
    postId = Number(created.headers.get("location")?.split("/").pop());
  });

  afterAll(async () => {
    await service?.close();
    await closeDatabase?.();
    await tracing?.shutdown();
  });

  async function send(method: string, path: string, body?: unknown, auth?: string, headers = {}) {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...(auth === undefined ? {} : { "x-auth-token": auth }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    await response.clone().arrayBuffer();
    return response;
  }

  /** The spans of the one trace whose request span is named `requestName`, once it has ended. */
  async function traceOf(requestName: string): Promise<{ request: ReadableSpan; spans: ReadableSpan[] }> {
    let request: ReadableSpan | undefined;
    await expect
      .poll(() => {
        request = exporter.getFinishedSpans().find((span) => span.name === requestName);
        return request;
      })
      .toBeDefined();
    const traceId = request?.spanContext().traceId;
    // The use-case span ends once the answer is written, just after the request span.
    await expect
      .poll(() =>
        exporter
          .getFinishedSpans()
          .some((span) => span.spanContext().traceId === traceId && span.kind === SpanKind.INTERNAL),
      )
      .toBe(true);
    const spans = exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
    return { request: request as ReadableSpan, spans };
  }

  const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
  // Under `ancestor` at any depth: a statement a new connection sends as it opens (the server's
  // timeline) sits under the pool's connect span, itself under the use case.
  const isUnder = (
    span: ReadableSpan,
    ancestor: ReadableSpan | undefined,
    spans: readonly ReadableSpan[],
  ) => {
    const byId = new Map(spans.map((each) => [each.spanContext().spanId, each]));
    for (
      let id = parentOf(span);
      id !== undefined;
      id = byId.get(id) && parentOf(byId.get(id) as ReadableSpan)
    ) {
      if (id === ancestor?.spanContext().spanId) return true;
    }
    return false;
  };

  // First: the exporter holds every span since start-up, sign-up and log-in included.
  it("records no password, token, title or content in any span (sign-up, log-in, create)", () => {
    const everything = JSON.stringify(
      exporter
        .getFinishedSpans()
        .map((span) => ({ name: span.name, attributes: span.attributes, events: span.events })),
    );
    expect(everything).toContain("login");
    for (const secret of [PASSWORD, token, TITLE, CONTENT]) expect(everything).not.toContain(secret);
  });

  it("makes no span of a statement outside a request (the migrations at start-up ran some)", () => {
    const statements = exporter.getFinishedSpans().filter((span) => span.name.startsWith("pg"));
    expect(statements.length).toBeGreaterThan(0);
    expect(statements.filter((span) => parentOf(span) === undefined)).toEqual([]);
  });

  it("makes one trace of a request: its span, the use case's under it, each statement under that", async () => {
    exporter.reset();
    const response = await send("GET", `/api/v1/posts/${postId}?unused=query`);
    expect(response.status).toBe(200);

    const { request, spans } = await traceOf("GET /api/v1/posts/:id");
    expect(request.kind).toBe(SpanKind.SERVER);
    expect(parentOf(request)).toBeUndefined();
    expect(request.attributes).toMatchObject({
      "http.route": "/api/v1/posts/:id",
      "http.request.method": "GET",
      "http.response.status_code": 200,
      "url.path": `/api/v1/posts/${postId}`,
    });

    const useCase = spans.find((span) => span.name === "getPost");
    expect(useCase, spans.map((span) => span.name).join(", ")).toBeDefined();
    expect(parentOf(useCase as ReadableSpan)).toBe(request.spanContext().spanId);
    expect(useCase?.attributes["code.function.name"]).toBe("getPost");

    const statements = spans.filter((span) => span.name.startsWith("pg.query"));
    // The lookup's statements carry the id as a parameter; a connection opened for them first asks
    // the server's timeline, a statement without one.
    const opening = (span: ReadableSpan) =>
      /pg_is_in_recovery/.test(String(span.attributes["db.query.text"]));
    expect(statements.filter((span) => !opening(span)).length).toBeGreaterThanOrEqual(1);
    for (const statement of statements) {
      expect(statement.kind).toBe(SpanKind.CLIENT);
      expect(isUnder(statement, useCase, spans)).toBe(true);
      expect(statement.attributes["db.system.name"]).toBe("postgresql");
      expect(statement.attributes["db.operation.name"]).toBe("SELECT");
      if (!opening(statement)) expect(statement.attributes["db.query.text"]).toMatch(/\$1/);
    }
  });

  it("continues the caller's trace from its traceparent header", async () => {
    exporter.reset();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpanId = "00f067aa0ba902b7";
    const response = await send("GET", "/api/v1/posts?size=1", undefined, undefined, {
      traceparent: `00-${traceId}-${callerSpanId}-01`,
    });
    expect(response.status).toBe(200);

    const { request, spans } = await traceOf("GET /api/v1/posts");
    expect(request.spanContext().traceId).toBe(traceId);
    expect(parentOf(request)).toBe(callerSpanId);
    const useCase = spans.find((span) => span.name === "listPosts");
    expect(parentOf(useCase as ReadableSpan)).toBe(request.spanContext().spanId);
    expect(spans.filter((span) => span.name.startsWith("pg.query")).length).toBeGreaterThanOrEqual(1);
  });

  it("names a use case for every API route, and every named one is a route", () => {
    const apiRoutes = routes.filter((route) => route.split(" ")[1]?.startsWith("/api/"));
    expect(apiRoutes.length).toBeGreaterThan(0);
    expect(new Set(apiRoutes)).toEqual(new Set(Object.keys(USE_CASE_OF_ROUTE)));
  });

  // Last: it closes the service's pool.
  it("marks the use case and the request failed when the database fails under them", async () => {
    await service.database.close();
    exporter.reset();
    const response = await send("GET", `/api/v1/posts/${postId}`);
    expect(response.status).toBe(503);

    const { request, spans } = await traceOf("GET /api/v1/posts/:id");
    expect(request.status.code).toBe(SpanStatusCode.ERROR);
    expect(request.attributes["http.response.status_code"]).toBe(503);
    const useCase = spans.find((span) => span.name === "getPost");
    expect(useCase?.status.code).toBe(SpanStatusCode.ERROR);
    expect(useCase?.events.some((event) => event.name === "exception")).toBe(true);
  });
});
