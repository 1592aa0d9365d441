import type { Reply } from "../http/api-client.js";
import {
  expectHeader,
  expectKeys,
  expectStatus,
  expectThat,
  JSON_UTF8,
  jsonOf,
  objectOf,
  TIMESTAMP,
} from "./expectations.js";

/**
 * A post as docs/posts.md#a-post-on-the-wire puts it on the wire. Declared here from the docs, like
 * every shape this suite reads, and not taken from @posts/client or the service's tests: the suite
 * imports no code of the service, so that it judges a deployment by the docs alone.
 */
export interface PostJson {
  readonly id: number;
  readonly title: string;
  readonly content: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly user: { readonly id: number; readonly email: string };
}

/** A page of the listing (docs/posts.md#pages-get-apiv1posts). */
export interface PageJson {
  readonly content: readonly PostJson[];
  readonly size: number;
  readonly nextCursor: string | null;
}

/** A user as POST and GET /api/v1/user answer it (docs/authentication.md#register-post-apiv1user). */
export interface UserJson {
  readonly id: number;
  readonly email: string;
  readonly createdAt: string;
}

const SECRET_KEYS = new Set(["password", "passwordhash", "password_hash", "hash"]);

/** Fails when any property at any depth is named like a password or its hash (docs/authentication.md#register-post-apiv1user). */
export function expectNoSecrets(value: unknown, what: string): void {
  const visit = (node: unknown, at: string): void => {
    if (Array.isArray(node)) {
      for (const [index, item] of node.entries()) visit(item, `${at}[${index}]`);
    } else if (typeof node === "object" && node !== null) {
      for (const [key, child] of Object.entries(node)) {
        expectThat(
          !SECRET_KEYS.has(key.toLowerCase()),
          `${what}`,
          "no password or hash property",
          `${at}.${key}`,
        );
        visit(child, `${at}.${key}`);
      }
    }
  };
  visit(value, "body");
}

function expectId(value: unknown, what: string): void {
  expectThat(Number.isSafeInteger(value) && (value as number) > 0, what, "a positive JSON integer", value);
}

function expectTimestamp(value: unknown, what: string): void {
  expectThat(typeof value === "string" && TIMESTAMP.test(value), what, "yyyy-MM-ddTHH:mm:ss.SSS", value);
}

/**
 * Fails unless `value` is exactly a post as docs/posts.md#a-post-on-the-wire writes it: the six
 * properties and no other, integer ids, timestamps with milliseconds and no zone, `user` with `id`
 * and `email` only.
 */
export function expectPost(value: unknown, what: string): PostJson {
  const post = objectOf(value, what);
  expectKeys(post, ["id", "title", "content", "createdAt", "updatedAt", "user"], what);
  expectId(post.id, `${what}.id`);
  expectThat(typeof post.title === "string", `${what}.title`, "a string", post.title);
  expectThat(typeof post.content === "string", `${what}.content`, "a string", post.content);
  expectTimestamp(post.createdAt, `${what}.createdAt`);
  expectTimestamp(post.updatedAt, `${what}.updatedAt`);
  const user = objectOf(post.user, `${what}.user`);
  expectKeys(user, ["id", "email"], `${what}.user`);
  expectId(user.id, `${what}.user.id`);
  expectThat(typeof user.email === "string", `${what}.user.email`, "a string", user.email);
  return post as unknown as PostJson;
}

/** Fails unless the reply is 200 JSON carrying one post; answers it. */
export function expectPostReply(reply: Reply): PostJson {
  expectStatus(reply, 200);
  expectThat(
    (reply.headers.get("content-type") ?? "").toLowerCase().startsWith("application/json"),
    `${reply.request}: content-type`,
    "application/json",
    reply.headers.get("content-type"),
  );
  return expectPost(jsonOf(reply), `${reply.request}: post`);
}

/** Fails unless the reply is 200 with a page (`content`, `size`, `nextCursor`) of posts; answers it. */
export function expectPageReply(reply: Reply): PageJson {
  expectStatus(reply, 200);
  const what = `${reply.request}: page`;
  const page = objectOf(jsonOf(reply), what);
  expectKeys(page, ["content", "size", "nextCursor"], what);
  expectThat(Array.isArray(page.content), `${what}.content`, "an array", page.content);
  for (const [index, post] of (page.content as unknown[]).entries())
    expectPost(post, `${what}.content[${index}]`);
  expectThat(Number.isSafeInteger(page.size), `${what}.size`, "an integer", page.size);
  expectThat(
    page.nextCursor === null || (typeof page.nextCursor === "string" && page.nextCursor !== ""),
    `${what}.nextCursor`,
    "null or a non-empty string",
    page.nextCursor,
  );
  return page as unknown as PageJson;
}

/** Fails unless `value` is exactly `{id, email, createdAt}`; answers it. */
export function expectUser(value: unknown, what: string): UserJson {
  const user = objectOf(value, what);
  expectKeys(user, ["id", "email", "createdAt"], what);
  expectId(user.id, `${what}.id`);
  expectThat(typeof user.email === "string", `${what}.email`, "a string", user.email);
  expectTimestamp(user.createdAt, `${what}.createdAt`);
  return user as unknown as UserJson;
}

/** Fails unless the reply is `status` with a JSON user; answers it. */
export function expectUserReply(reply: Reply, status: number): UserJson {
  expectStatus(reply, status);
  expectHeader(reply, "content-type", JSON_UTF8);
  const body = jsonOf(reply);
  expectNoSecrets(body, `${reply.request}: body`);
  return expectUser(body, `${reply.request}: user`);
}

/** The post id at the end of a `Location`, or a failure: an absolute URL ending in `/api/v1/posts/<id>`. */
export function postIdOfLocation(reply: Reply): number {
  const location = reply.headers.get("location");
  const what = `${reply.request}: Location`;
  expectThat(location !== null && URL.canParse(location), what, "an absolute URL", location);
  const match = /\/api\/v1\/posts\/([0-9]+)$/.exec(new URL(location as string).pathname);
  expectThat(
    match !== null && (location as string).endsWith(match[0]),
    what,
    "an absolute URL ending in /api/v1/posts/<id>",
    location,
  );
  return Number((match as RegExpExecArray)[1]);
}
