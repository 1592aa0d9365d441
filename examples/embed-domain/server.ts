import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createPost, patchPost, ROLE_USER, systemClock } from "@posts/domain";
import { mapPostStore } from "./map-post-store.js";

// This service's own accounts and authentication: a header naming the user (yours verifies a token).
const ACCOUNTS = new Map<number, string>().set(1, "alice@example.com").set(2, "bob@example.com");
const deps = { posts: mapPostStore(ACCOUNTS), clock: systemClock };

// Each failure the two use cases can answer, mapped once: a kind added later fails to compile here.
type Failure = Extract<Awaited<ReturnType<typeof createPost | typeof patchPost>>, { ok: false }>["error"];
const STATUS = {
  "invalid-idempotency-key": 400,
  validation: 400,
  "empty-patch": 400,
  "post-not-found": 404,
  "not-post-author": 403,
  "version-mismatch": 412,
  "idempotency-key-reused": 422,
  "user-gone": 401,
} satisfies Record<Failure["kind"], number>;

const server = createServer(async (req, res) => {
  const userId = Number(req.headers["x-user-id"]);
  const principal = { userId, email: ACCOUNTS.get(userId) ?? "", authority: ROLE_USER };
  const postId = /^\/posts\/([^/]+)$/.exec(req.url ?? "")?.[1];
  let body: { title?: unknown; content?: unknown };
  try {
    body = Object(JSON.parse(Buffer.concat(await req.toArray()).toString() || "{}")); // null or 5: no fields
  } catch {
    return res.writeHead(400).end();
  }
  const result =
    req.method === "POST" && req.url === "/posts"
      ? await createPost(deps, { principal, title: body.title, content: body.content })
      : req.method === "PATCH" && postId !== undefined
        ? await patchPost(deps, { principal, postId, title: body.title, content: body.content })
        : undefined;
  if (result === undefined) return res.writeHead(404).end();
  const status = result.ok ? (req.method === "POST" ? 201 : 200) : STATUS[result.error.kind];
  // createPost answers the new post's id; the client gets the post as stored, as from a PATCH.
  const answer = result.ok ? await deps.posts.findById(result.value.id) : result.error;
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(answer));
});
server.listen(Number(process.env.PORT ?? 3000), "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
