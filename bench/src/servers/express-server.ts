/**
 * The posts API the way most teams write one, to show where the service stands against common
 * practice: Express with `express.json()`, `pg`'s pool with unnamed queries, `jsonwebtoken` for
 * tokens, `res.json` for answers, Express's defaults left as they are. Same SQL, results and
 * wire format as the service and the baseline (reference-api.ts), same pool size and password
 * hashing. Only what the benchmark drives is here (read one, list and search, create, modify, log in);
 * conditional requests and idempotency keys are measured against the service itself.
 *
 * The key goes to `jwt.verify` as the string it is in the environment, as in most code. That
 * costs: given a string, jsonwebtoken 9 first tries to read it as a PEM public key, and the
 * failure costs about 0.5 ms of CPU per verification here (7 µs with a `KeyObject`), which is
 * most of what a create or a patch costs this server. It is what common practice pays.
 *
 * Run as its own process: `node bench/dist/servers/express-server.js` with PORT, HOST, DATABASE_URL,
 * JWT_SECRET, JWT_ISSUER, JWT_TTL_MS and DB_POOL_SIZE.
 */
import { verify as verifyPassword } from "@node-rs/argon2";
import { parseId } from "@posts/domain";
import express, { type NextFunction, type Request, type Response } from "express";
import jwt from "jsonwebtoken";
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

const env = process.env;
const secret = env.JWT_SECRET ?? "";
const issuer = env.JWT_ISSUER ?? "posts-service";
const ttlMs = Number(env.JWT_TTL_MS ?? 86_400_000);
if (Buffer.byteLength(secret) < 32) throw new Error("JWT_SECRET must be at least 32 bytes");

// int8 ids as numbers, as the service's adapter does.
pg.types.setTypeParser(20, Number);
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.DB_POOL_SIZE ?? 10) });

/** Runs a statement unnamed, as `pool.query(text, values)` in most code. */
const query = async <R extends pg.QueryResultRow>(statement: { text: string; values: unknown[] }) =>
  (await pool.query<R>(statement.text, statement.values)).rows;

interface Principal {
  userId: number;
  email: string;
}

/** The user a valid `x-auth-token` names, or undefined after answering 401/403. */
function authenticate(req: Request, res: Response): Principal | undefined {
  const token = req.get("x-auth-token");
  if (token === undefined || token === "") {
    res.status(403).json(errorBody(403, "Forbidden", req.originalUrl));
    return undefined;
  }
  let claims: jwt.JwtPayload;
  try {
    claims = jwt.verify(token, secret, { algorithms: ["HS256"], issuer }) as jwt.JwtPayload;
  } catch {
    res.status(401).json({ error: INVALID_TOKEN });
    return undefined;
  }
  const userId = typeof claims.sub === "string" ? parseId(claims.sub) : undefined;
  const role = Array.isArray(claims.roles)
    ? (claims.roles[0] as { authority?: unknown } | undefined)
    : undefined;
  if (userId === undefined || typeof claims.email !== "string" || typeof role?.authority !== "string") {
    res.status(401).json({ error: INVALID_TOKEN });
    return undefined;
  }
  if (role.authority !== "ROLE_USER") {
    res.status(403).json(errorBody(403, "Forbidden", req.originalUrl));
    return undefined;
  }
  return { userId, email: claims.email };
}

const badRequest = (req: Request, res: Response) =>
  res.status(400).json(errorBody(400, "Bad Request", req.originalUrl));
const notFound = (res: Response) => res.status(404).type("text/plain; charset=utf-8").send(NOT_FOUND);

const app = express();
app.use(express.json({ limit: "16mb" }));

app.get("/health", (_req, res) => {
  res.json({ status: "ok" });
});

app.get("/api/v1/posts/:id", async (req, res) => {
  const id = parseId(req.params.id);
  if (id === undefined) return notFound(res);
  const [row] = await query<PostRow>(postById(id));
  if (row === undefined) return notFound(res);
  res.json(toWire(row));
});

app.get("/api/v1/posts", async (req, res) => {
  const parsed = pageQuery(req.query as PageParameters);
  if (parsed === undefined) return badRequest(req, res);
  const { size, before, userId, search } = parsed;
  const rows = await query<PostRow>(page(size + 1, before, userId, search));
  const { content, nextCursor, linkQuery } = nextPage(rows, size, userId, search);
  if (linkQuery !== undefined)
    res.set("link", `<http://${req.get("host")}/api/v1/posts?${linkQuery}>; rel="next"`);
  res.json({ content: content.map(toWire), size, nextCursor });
});

app.post("/api/v1/posts", async (req, res) => {
  const principal = authenticate(req, res);
  if (principal === undefined) return;
  const body = req.body as { title?: unknown; content?: unknown } | undefined;
  if (body === undefined || !isTitle(body.title) || !isText(body.content)) return badRequest(req, res);
  const [row] = await query<PostRow>(createPost(body.title, body.content, principal.userId));
  if (row === undefined) return res.status(401).json({ error: UNKNOWN_USER });
  res
    .status(201)
    .location(`http://${req.get("host")}/api/v1/posts/${row.id}`)
    .end();
});

app.patch("/api/v1/posts/:id", async (req, res) => {
  const principal = authenticate(req, res);
  if (principal === undefined) return;
  const body = (req.body ?? {}) as { title?: unknown; content?: unknown };
  const title = body.title ?? undefined;
  const content = body.content ?? undefined;
  if (title === undefined && content === undefined) return res.status(400).end();
  if ((title !== undefined && !isTitle(title)) || (content !== undefined && !isText(content))) {
    return badRequest(req, res);
  }
  const id = parseId(req.params.id);
  if (id === undefined) return notFound(res);
  const [row] = await query<PatchRow>(patchPost(id, principal.userId, title, content));
  if (row !== undefined && row.id !== null) return res.json(toWire(row as PostRow));
  if (row === undefined || row.owner_id === principal.userId) return notFound(res);
  res.status(401).type("text/plain; charset=utf-8").send(NOT_AUTHOR);
});

app.post("/api/v1/user/login", async (req, res) => {
  const { email, password } = (req.body ?? {}) as { email?: unknown; password?: unknown };
  if (typeof email !== "string" || typeof password !== "string") {
    return res.status(401).json({ error: BAD_CREDENTIALS });
  }
  const [user] = await query<{ id: number; email: string; password_hash: string }>(userByEmail(email));
  if (user === undefined || !(await verifyPassword(user.password_hash, password))) {
    return res.status(401).json({ error: BAD_CREDENTIALS });
  }
  const token = jwt.sign({ email: user.email, roles: [{ authority: "ROLE_USER" }] }, secret, {
    algorithm: "HS256",
    issuer,
    subject: String(user.id),
    expiresIn: Math.floor(ttlMs / 1000),
  });
  res.json({ tokenType: "Bearer", token, expiresIn: ttlMs });
});

// Express 5 hands a rejected handler's error here.
app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
  console.error(error);
  res.status(500).json({ error: "Internal Server Error" });
});

const server = app.listen(Number(env.PORT ?? 8082), env.HOST ?? "127.0.0.1");

const shutdown = () => {
  server.close(() => void pool.end().then(() => process.exit(0)));
  server.closeAllConnections();
};
process.once("SIGTERM", shutdown);
process.once("SIGINT", shutdown);
