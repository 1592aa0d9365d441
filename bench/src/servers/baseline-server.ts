/**
 * The baseline: the posts API the leanest fair way, the limit of this stack to measure the
 * service against in the same run. Same SQL, same wire format, same driver and pool size, same
 * password hashing and the same token checks, but no architecture: no DI, no domain layer, no
 * query builder, no plugins. Every statement is a named prepared statement (`pg`'s `name`), so
 * PostgreSQL parses it once per connection, as the fastest honest Fastify + `pg` code
 * would. Only what the benchmark drives is here (read one, list and search, create, modify, log in);
 * conditional requests and idempotency keys are measured against the service itself. What it
 * shares with express-server.ts is reference-api.ts, which both import alike; how each serves is
 * its own, so that neither reference's speed depends on the other's code.
 *
 * Run as its own process: `node bench/dist/servers/baseline-server.js` with PORT, HOST,
 * DATABASE_URL, JWT_SECRET, JWT_ISSUER, JWT_TTL_MS and DB_POOL_SIZE.
 */
import { timingSafeEqual } from "node:crypto";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { verify as verifyPassword } from "@node-rs/argon2";
import { parseId } from "@posts/domain";
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import pg from "pg";
import {
  BAD_CREDENTIALS,
  createPost,
  errorBody,
  INVALID_TOKEN,
  isText,
  isTitle,
  NOT_AUTHOR,
  NOT_FOUND,
  nextPage,
  type PageParameters,
  type PatchRow,
  type PostRow,
  page,
  pageQuery,
  patchPost,
  postById,
  toWire,
  UNKNOWN_USER,
  userByEmail,
} from "./reference-api.js";
import { hmac, signToken, type TokenSettings } from "./tokens.js";

const env = process.env;
const port = Number(env.PORT ?? 8081);
const host = env.HOST ?? "127.0.0.1";
const tokens: TokenSettings = {
  secret: env.JWT_SECRET ?? "",
  issuer: env.JWT_ISSUER ?? "posts-service",
  ttlMs: Number(env.JWT_TTL_MS ?? 86_400_000),
};
if (Buffer.byteLength(tokens.secret) < 32) throw new Error("JWT_SECRET must be at least 32 bytes");

// int8 ids as numbers, as the service's adapter does.
pg.types.setTypeParser(20, Number);
const pool = new pg.Pool({
  connectionString: env.DATABASE_URL,
  max: Number(env.DB_POOL_SIZE ?? 10),
});
/**
 * The partitions of `posts` (k of each `posts_p<k>`) when it is partitioned, read once at start:
 * a post by id is read from its partition (`postById`).
 */
const partitions = new Set(
  (
    await pool.query<{ k: number }>(
      "select substr(c.relname, 8)::int as k from pg_inherits i join pg_class c on c.oid = i.inhrelid " +
        "where i.inhparent = 'posts'::regclass",
    )
  ).rows.map((row) => row.k),
);

// --- tokens: HS256 by hand, the checks the contract lists ---------------------------------

interface Principal {
  userId: number;
  email: string;
  authority: string;
}

const b64json = (part: string): unknown => JSON.parse(Buffer.from(part, "base64url").toString("utf8"));

function verifyToken(token: string): Principal | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  const [h, p, s] = parts as [string, string, string];
  try {
    const header = b64json(h) as { alg?: unknown };
    if (header.alg !== "HS256") return undefined;
    const given = Buffer.from(s, "base64url");
    const expected = hmac(tokens.secret, `${h}.${p}`);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const c = b64json(p) as Record<string, unknown>;
    if (c.iss !== tokens.issuer || typeof c.exp !== "number" || c.exp * 1000 <= Date.now()) return undefined;
    const userId = typeof c.sub === "string" ? parseId(c.sub) : undefined;
    const role = Array.isArray(c.roles) ? (c.roles[0] as { authority?: unknown } | undefined) : undefined;
    if (userId === undefined || typeof c.email !== "string" || typeof role?.authority !== "string") {
      return undefined;
    }
    return { userId, email: c.email, authority: role.authority };
  } catch {
    return undefined;
  }
}

function envelope(request: FastifyRequest, reply: FastifyReply, status: number, error: string) {
  return reply.code(status).send(errorBody(status, error, request.url));
}

/** The principal with ROLE_USER, or undefined after answering 401/403. */
function authenticate(request: FastifyRequest, reply: FastifyReply): Principal | undefined {
  const token = request.headers["x-auth-token"];
  if (typeof token !== "string" || token === "") {
    void envelope(request, reply, 403, "Forbidden");
    return undefined;
  }
  const principal = verifyToken(token);
  if (principal === undefined) {
    void reply.code(401).send({ error: INVALID_TOKEN });
    return undefined;
  }
  if (principal.authority !== "ROLE_USER") {
    void envelope(request, reply, 403, "Forbidden");
    return undefined;
  }
  return principal;
}

// --- schemas: only for serialization (fast-json-stringify), as a Fastify app would do ------

const postSchema = {
  type: "object",
  properties: {
    id: { type: "integer" },
    title: { type: "string" },
    content: { type: "string" },
    createdAt: { type: "string" },
    updatedAt: { type: "string" },
    user: { type: "object", properties: { id: { type: "integer" }, email: { type: "string" } } },
  },
} as const;
const pageSchema = {
  type: "object",
  properties: {
    content: { type: "array", items: postSchema },
    size: { type: "integer" },
    nextCursor: { type: ["string", "null"] },
  },
} as const;

// --- the app -------------------------------------------------------------------------------

const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
const eventLoopDelay = monitorEventLoopDelay({ resolution: 10 });
eventLoopDelay.enable();

app.get("/health", async () => ({ status: "ok" }));

// The one figure the harness reads, in prom-client's name; reading resets it as prom-client does.
app.get("/metrics", async (_request, reply) => {
  const p99 = eventLoopDelay.percentile(99) / 1e9;
  eventLoopDelay.reset();
  return reply.type("text/plain; version=0.0.4").send(`nodejs_eventloop_lag_p99_seconds ${p99}\n`);
});

app.get<{ Params: { id: string } }>(
  "/api/v1/posts/:id",
  { schema: { response: { 200: postSchema } } },
  async (request, reply) => {
    const id = parseId(request.params.id);
    if (id === undefined) return reply.code(404).type("text/plain; charset=utf-8").send(NOT_FOUND);
    const { rows } = await pool.query<PostRow>(postById(id, partitions));
    const row = rows[0];
    if (row === undefined) return reply.code(404).type("text/plain; charset=utf-8").send(NOT_FOUND);
    return toWire(row);
  },
);

app.get<{ Querystring: PageParameters }>(
  "/api/v1/posts",
  { schema: { response: { 200: pageSchema } } },
  async (request, reply) => {
    const parsed = pageQuery(request.query);
    if (parsed === undefined) return envelope(request, reply, 400, "Bad Request");
    const { size, before, userId, search } = parsed;
    const { rows } = await pool.query<PostRow>(page(size + 1, before, userId, search));
    const { content, nextCursor, linkQuery } = nextPage(rows, size, userId, search);
    if (linkQuery !== undefined) {
      reply.header("link", `<http://${request.headers.host}/api/v1/posts?${linkQuery}>; rel="next"`);
    }
    return { content: content.map(toWire), size, nextCursor };
  },
);

app.post<{ Body: { title?: unknown; content?: unknown } | null }>("/api/v1/posts", async (request, reply) => {
  const principal = authenticate(request, reply);
  if (principal === undefined) return reply;
  const body = request.body;
  if (body === null || typeof body !== "object" || !isTitle(body.title) || !isText(body.content)) {
    return envelope(request, reply, 400, "Bad Request");
  }
  const { rows } = await pool.query<PostRow>(createPost(body.title, body.content, principal.userId));
  const row = rows[0];
  if (row === undefined) return reply.code(401).send({ error: UNKNOWN_USER });
  return reply.code(201).header("location", `http://${request.headers.host}/api/v1/posts/${row.id}`).send();
});

app.patch<{ Params: { id: string }; Body: { title?: unknown; content?: unknown } | null }>(
  "/api/v1/posts/:id",
  { schema: { response: { 200: postSchema } } },
  async (request, reply) => {
    const principal = authenticate(request, reply);
    if (principal === undefined) return reply;
    const body = request.body ?? {};
    const title = body.title ?? undefined;
    const content = body.content ?? undefined;
    if (title === undefined && content === undefined) return reply.code(400).send();
    if ((title !== undefined && !isTitle(title)) || (content !== undefined && !isText(content))) {
      return envelope(request, reply, 400, "Bad Request");
    }
    const id = parseId(request.params.id);
    if (id === undefined) return reply.code(404).type("text/plain; charset=utf-8").send(NOT_FOUND);
    const { rows } = await pool.query<PatchRow>(patchPost(id, principal.userId, title, content));
    const row = rows[0];
    if (row !== undefined && row.id !== null) return toWire(row as PostRow);
    return row === undefined || row.owner_id === principal.userId
      ? reply.code(404).type("text/plain; charset=utf-8").send(NOT_FOUND)
      : reply.code(401).type("text/plain; charset=utf-8").send(NOT_AUTHOR);
  },
);

app.post<{ Body: { email?: unknown; password?: unknown } | null }>(
  "/api/v1/user/login",
  async (request, reply) => {
    const { email, password } = request.body ?? {};
    const invalid = () => reply.code(401).send({ error: BAD_CREDENTIALS });
    if (typeof email !== "string" || typeof password !== "string") return invalid();
    const { rows } = await pool.query<{ id: number; email: string; password_hash: string }>(
      userByEmail(email),
    );
    const user = rows[0];
    if (user === undefined || !(await verifyPassword(user.password_hash, password))) return invalid();
    return { tokenType: "Bearer", token: signToken(tokens, user), expiresIn: tokens.ttlMs };
  },
);

const shutdown = async () => {
  await app.close();
  await pool.end();
  process.exit(0);
};
process.once("SIGTERM", shutdown);
process.once("SIGINT", shutdown);

await app.listen({ port, host });
