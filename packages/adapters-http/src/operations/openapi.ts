import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyPluginAsync } from "fastify";
import fp from "fastify-plugin";

/** The name of the security scheme protected routes refer to. */
export const SECURITY_SCHEME = "authToken";

const plugin: FastifyPluginAsync = async (app) => {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Posts service",
        version: "1.0.0",
        description:
          "Posts with token-protected creation and modification. Send the JWT from POST /api/v1/user/login " +
          "in the X-AUTH-TOKEN header, without a Bearer prefix. An invalid token is refused with 401 on every path.",
      },
      tags: [
        { name: "posts", description: "Posts: anyone reads, users with ROLE_USER write their own" },
        { name: "users", description: "Registration, login and one's own account" },
        { name: "operations", description: "Health, readiness, metrics" },
      ],
      components: {
        securitySchemes: {
          [SECURITY_SCHEME]: { type: "apiKey", in: "header", name: "X-AUTH-TOKEN", description: "HS256 JWT" },
        },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs", staticCSP: true });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
};

/**
 * The OpenAPI 3.1 document, built by @fastify/swagger from the route schemas (every status
 * of every route, and the `X-AUTH-TOKEN` apiKey scheme), at GET /openapi.json, and Swagger UI
 * at /docs. Register before the routes: it collects them as they are added.
 */
export const openApi = fp(plugin, { name: "posts-openapi", fastify: "5.x" });
