import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyPluginAsync } from "fastify";
import fp from "fastify-plugin";
import { namedSchemaDefinitions, withSchemaRefs } from "../schemas/components.js";
import { EMPTY_BODY_TOO, METHOD_NOT_ALLOWED_RESPONSE } from "../schemas/responses.js";

/** The name of the security scheme protected routes refer to. */
export const SECURITY_SCHEME = "authToken";

/** Where a status's response is at once `content` and, in another case, no body (`EMPTY_BODY_TOO`). */
interface EmptyBodyToo {
  readonly path: string;
  readonly method: string;
  readonly status: string;
}

/** Notes the responses of one route that carry {@link EMPTY_BODY_TOO}, which @fastify/swagger drops. */
function emptyBodiesOf(
  url: string,
  methods: string | string[],
  response: object | undefined,
): EmptyBodyToo[] {
  const path = url.replace(/:(\w+)/g, "{$1}");
  return Object.entries(response ?? {})
    .filter(([, value]) => typeof value === "object" && value !== null && EMPTY_BODY_KEY in value)
    .flatMap(([status]) =>
      [methods].flat().map((method) => ({ path, method: method.toLowerCase(), status })),
    );
}

const EMPTY_BODY_KEY = Object.keys(EMPTY_BODY_TOO)[0] as keyof typeof EMPTY_BODY_TOO;

const plugin: FastifyPluginAsync = async (app) => {
  const emptyBodies: EmptyBodyToo[] = [];
  // Shared schemas no route refers to: they name the shapes in the document and leave the
  // routes' compiled serializers as they are.
  for (const definition of namedSchemaDefinitions()) app.addSchema(definition);
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Posts service",
        version: "1.0.0",
        license: { name: "MIT", identifier: "MIT" },
        description:
          "Posts with token-protected creation and modification. Send the JWT from POST /api/v1/user/login " +
          "in the X-AUTH-TOKEN header, without a Bearer prefix. An invalid token is refused with 401 on every path. " +
          "A method a documented path does not list is answered 405 with `Allow` " +
          "(`#/components/responses/MethodNotAllowed`). A `Host` (or, behind a trusted proxy, " +
          "`X-Forwarded-Host`) that is not a valid host[:port] is answered 400 with the error envelope " +
          "on every path. Every answer also carries the security headers " +
          "(Content-Security-Policy, Strict-Transport-Security, X-Content-Type-Options, …), which no operation repeats.",
      },
      // Relative: the document describes whichever address served it.
      servers: [{ url: "/" }],
      tags: [
        { name: "posts", description: "Posts: anyone reads, users with ROLE_USER write their own" },
        { name: "users", description: "Registration, login and one's own account" },
        { name: "operations", description: "Health, readiness, metrics" },
      ],
      components: {
        securitySchemes: {
          [SECURITY_SCHEME]: { type: "apiKey", in: "header", name: "X-AUTH-TOKEN", description: "HS256 JWT" },
        },
        responses: { MethodNotAllowed: METHOD_NOT_ALLOWED_RESPONSE },
      },
    },
    // Names each shared schema after its `$id`, instead of def-0, def-1, …
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    // The document refers to the named shapes instead of repeating them; the routes keep theirs.
    transform: ({ schema, url, route }) => {
      if (!schema.hide) emptyBodies.push(...emptyBodiesOf(url, route.method, schema.response as object));
      return { schema: withSchemaRefs(schema) as typeof schema, url };
    },
    transformObject: (documentObject) => {
      if (!("openapiObject" in documentObject)) return documentObject.swaggerObject;
      const { openapiObject } = documentObject;
      for (const { path, method, status } of emptyBodies) {
        const operation = (
          openapiObject.paths?.[path] as Record<string, { responses: object }> | undefined
        )?.[method];
        const response = operation?.responses[status as keyof object] as object | undefined;
        if (response !== undefined) Object.assign(response, EMPTY_BODY_TOO);
      }
      return openapiObject;
    },
  });
  let policies: { readonly http: string; readonly https: string } | undefined;
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    // Set per request rather than with `staticCSP`, whose policy is the same for every request.
    uiHooks: {
      onRequest: (request, reply, done) => {
        policies ??= docsPolicies(app.swaggerCSP);
        reply.header(
          "content-security-policy",
          request.protocol === "https" ? policies.https : policies.http,
        );
        done();
      },
    },
  });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
};

/**
 * The Content-Security-Policy of the Swagger UI pages: @fastify/swagger-ui's own (`staticCSP`),
 * with `upgrade-insecure-requests` only for a page served over HTTPS. Over plain HTTP that
 * directive makes the browser fetch the page's own scripts over HTTPS, which no one serves, so
 * the page stays blank wherever it is opened but on localhost (which browsers never upgrade).
 */
function docsPolicies(hashes: { readonly script: readonly string[]; readonly style: readonly string[] }) {
  const base =
    "default-src 'self'; base-uri 'self'; font-src 'self' https: data:; frame-ancestors 'self'; " +
    "img-src 'self' data: validator.swagger.io; object-src 'none'; " +
    `script-src 'self' ${hashes.script.join(" ")}; script-src-attr 'none'; ` +
    `style-src 'self' https: ${hashes.style.join(" ")};`;
  return { http: base, https: `${base} upgrade-insecure-requests;` };
}

/**
 * The OpenAPI 3.1 document, built by @fastify/swagger from the route schemas (every status
 * of every route, and the `X-AUTH-TOKEN` apiKey scheme), at GET /openapi.json, and Swagger UI
 * at /docs, with the security policy `docsPolicies` decides per request. Register before the routes: it collects them as they are added.
 */
export const openApi = fp(plugin, { name: "posts-openapi", fastify: "5.x" });
