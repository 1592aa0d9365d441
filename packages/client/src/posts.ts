import { errorOf, invalid, jsonOf } from "./answers.js";
import type { ClientError, Result } from "./result.js";
import type { Answer, CallOptions, Transport } from "./transport.js";
import type {
  Created,
  Deleted,
  ListQuery,
  NewPost,
  Post,
  PostChanges,
  PostPage,
  Versioned,
} from "./types.js";

const POSTS = "/api/v1/posts";

/** Options of a create. */
export interface CreateOptions extends CallOptions {
  /** The Idempotency-Key (1–255 visible ASCII characters); a fresh `crypto.randomUUID()` by default. */
  readonly idempotencyKey?: string;
}

/** `posts` of a client: create, read, update, delete and list posts. */
export class Posts {
  readonly #transport: Transport;

  /** Use `createClient(…).posts`. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Creates a post (needs a token). It always carries an Idempotency-Key, so a lost answer is
   * retried safely: the service creates the post once and answers the retry with its Location
   * (`replayed: true`). Failures: `validation`, `unauthorized`, `forbidden`,
   * `idempotency-key-reused`, and the transport's.
   */
  async create(post: NewPost, options: CreateOptions = {}): Promise<Result<Created>> {
    const idempotencyKey = options.idempotencyKey ?? crypto.randomUUID();
    const sent = await this.#transport.send(
      {
        method: "POST",
        path: POSTS,
        body: post,
        headers: { "idempotency-key": idempotencyKey },
        idempotent: true,
      },
      options,
    );
    if (!sent.ok) return sent;
    const answer = sent.value;
    if (answer.status !== 201) return { ok: false, error: errorOf(answer) };
    const location = answer.headers.get("location") ?? "";
    const id = /\/api\/v1\/posts\/(\d+)$/.exec(location)?.[1];
    if (id === undefined)
      return { ok: false, error: invalid(answer, `201 without a post's Location (${location})`) };
    const replayed = answer.headers.get("idempotent-replayed") === "true";
    return { ok: true, value: { id: Number(id), location, replayed, idempotencyKey } };
  }

  /** The post and its version (ETag), to base an update or a delete on. Failures: `not-found`, and the transport's. */
  async get(id: number, options: CallOptions = {}): Promise<Result<Versioned<Post>>> {
    const sent = await this.#transport.send(
      { method: "GET", path: `${POSTS}/${id}`, idempotent: true },
      options,
    );
    return versioned(sent);
  }

  /**
   * Changes the fields given of a post read before, only if nobody changed it since: it sends
   * `If-Match` with the version it was read at (which also makes the update safe to retry).
   * Answers the post after the change and its new version. Failures: `precondition-failed`
   * (changed meanwhile: read again), `not-found`, `not-author`, `validation`, `unauthorized`,
   * `forbidden`, and the transport's.
   */
  async update(read: Versioned<Pick<Post, "id">>, changes: PostChanges, options: CallOptions = {}) {
    const sent = await this.#transport.send(
      {
        method: "PATCH",
        path: `${POSTS}/${read.value.id}`,
        body: changes,
        headers: { "if-match": read.version },
        idempotent: true,
      },
      options,
    );
    return versioned(sent);
  }

  /**
   * Deletes a post: by id, or a post read before, then only if nobody changed it since
   * (`If-Match`). A delete is idempotent in effect and is retried; when a retry after a lost
   * answer finds no post (404, or a 412 for a conditional delete and then a 404 on reading it),
   * the result is `{ confirmed: false }` (see {@link Deleted}). Failures:
   * `not-found` (no such post before this call), `not-author`, `precondition-failed`,
   * `unauthorized`, `forbidden`, and the transport's.
   */
  async delete(
    target: number | Versioned<Pick<Post, "id">>,
    options: CallOptions = {},
  ): Promise<Result<Deleted>> {
    const id = typeof target === "number" ? target : target.value.id;
    const headers: Record<string, string> = typeof target === "number" ? {} : { "if-match": target.version };
    const sent = await this.#transport.send(
      { method: "DELETE", path: `${POSTS}/${id}`, headers, idempotent: true },
      options,
    );
    if (!sent.ok) return sent;
    if (sent.value.status === 204) return { ok: true, value: { confirmed: true } };
    if (!sent.value.maybeApplied) return { ok: false, error: errorOf(sent.value) };
    if (sent.value.status === 404) return { ok: true, value: { confirmed: false } };
    // The service answers a conditional delete of a post that is gone with 412: when an earlier
    // attempt may have deleted it, a read tells "gone" (our delete, most likely) from "changed".
    if (sent.value.status === 412) {
      const now = await this.#transport.send(
        { method: "GET", path: `${POSTS}/${id}`, idempotent: true },
        options,
      );
      if (now.ok && now.value.status === 404) return { ok: true, value: { confirmed: false } };
      if (now.ok && now.value.status === 200)
        return { ok: false, error: { ...errorOf(sent.value), maybeApplied: false } };
    }
    return { ok: false, error: errorOf(sent.value) };
  }

  /** One page: the first for `query`, or the one `cursor` (a page's `nextCursor`) names. */
  async page(
    query: ListQuery & { readonly cursor?: string } = {},
    options: CallOptions = {},
  ): Promise<Result<PostPage>> {
    const sent = await this.#transport.send({ method: "GET", path: POSTS, query, idempotent: true }, options);
    return jsonOf<PostPage>(sent, 200);
  }

  /**
   * Every post matching `query`, newest first, fetched a page at a time as the loop asks:
   * `for await (const post of client.posts.list({ q }))`. It follows `nextCursor` to the end,
   * through search pages that are short or empty while more may follow. A failure ends the loop
   * and is then in the listing's `error`.
   */
  list(query: ListQuery = {}, options: CallOptions = {}): PostListing {
    return new PostListing(this, query, options);
  }
}

/**
 * The posts of a listing as an async iterable, and its pages with {@link PostListing.pages}.
 * Iterating does not throw for a failed page: it stops, and {@link PostListing.error} says why.
 */
export class PostListing implements AsyncIterable<Post> {
  readonly #posts: Posts;
  readonly #query: ListQuery;
  readonly #options: CallOptions;
  #error: ClientError | undefined;

  /** Use `client.posts.list(query)`. */
  constructor(posts: Posts, query: ListQuery, options: CallOptions) {
    this.#posts = posts;
    this.#query = query;
    this.#options = options;
  }

  /** Why the last iteration stopped early; undefined when it reached the last page. */
  get error(): ClientError | undefined {
    return this.#error;
  }

  /** Every page, the first to the one whose `nextCursor` is null; each iteration starts from the first. */
  async *pages(): AsyncGenerator<PostPage, void, undefined> {
    this.#error = undefined;
    let cursor: string | undefined;
    do {
      const page = await this.#posts.page(
        cursor === undefined ? this.#query : { ...this.#query, cursor },
        this.#options,
      );
      if (!page.ok) {
        this.#error = page.error;
        return;
      }
      yield page.value;
      cursor = page.value.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** Every post of every page, in order; a failure ends it (see {@link PostListing.error}). */
  async *[Symbol.asyncIterator](): AsyncGenerator<Post, void, undefined> {
    for await (const page of this.pages()) yield* page.content;
  }
}

function versioned(sent: Result<Answer>): Result<Versioned<Post>> {
  const post = jsonOf<Post>(sent, 200);
  if (!post.ok || !sent.ok) return post as Result<never>;
  const version = sent.value.headers.get("etag");
  if (version === null) return { ok: false, error: invalid(sent.value, "a post without its ETag") };
  return { ok: true, value: { value: post.value, version } };
}
