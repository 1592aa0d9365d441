import type { DomainErrorOf } from "../errors.js";
import { DEFAULT_IDEMPOTENCY_TTL_MS, isValidIdempotencyKey } from "../idempotency-rules.js";
import type { CreatedPost } from "../ports/post-repository.js";
import { validatePostText } from "../post-rules.js";
import type { Principal } from "../principal.js";
import { err, ok, type Result } from "../result.js";
import type { Dependencies } from "./dependencies.js";

/** Input of {@link createPost}; title and content are as received, not yet validated. */
export interface CreatePostCommand {
  readonly principal: Principal;
  readonly title: unknown;
  readonly content: unknown;
  /**
   * The client's idempotency key, exactly as received (an empty string is a key, and an
   * invalid one); absent when the client sent none.
   */
  readonly idempotencyKey?: string;
}

/**
 * Creates a post written by the principal. Checks, in order: the idempotency key, when
 * given, is 1 to 255 visible ASCII characters ("invalid-idempotency-key") → title and
 * content valid ("validation", every failing field listed) → the principal's user still
 * exists ("user-gone") → the key, when given, was not used by this user before: with the same
 * title and content (compared exactly) it answers the post the key made, `replayed: true`,
 * creating nothing, even if that post has been modified or deleted since; with another title or
 * content, "idempotency-key-reused". Otherwise the post is stored exactly as sent, and the key
 * with it, remembered for `deps.idempotencyTtlMs` from now. Only a success is remembered, and
 * concurrent requests with one key create one post. The caller has already established that the
 * principal holds ROLE_USER.
 */
export async function createPost(
  deps: Pick<Dependencies, "posts" | "clock" | "idempotencyTtlMs">,
  command: CreatePostCommand,
): Promise<
  Result<
    CreatedPost,
    DomainErrorOf<"invalid-idempotency-key" | "validation" | "user-gone" | "idempotency-key-reused">
  >
> {
  const { idempotencyKey } = command;
  if (idempotencyKey !== undefined && !isValidIdempotencyKey(idempotencyKey)) {
    return err({ kind: "invalid-idempotency-key" });
  }

  const checked = validatePostText(command.title, command.content);
  if ("errors" in checked) return err({ kind: "validation", errors: checked.errors });

  const now = deps.clock.now();
  const post = { authorId: command.principal.userId, ...checked.text, createdAt: now };
  if (idempotencyKey === undefined) {
    const created = await deps.posts.create(post);
    if (created === undefined) return err({ kind: "user-gone" });
    return ok({ id: created.id, replayed: false });
  }

  const ttlMs = deps.idempotencyTtlMs ?? DEFAULT_IDEMPOTENCY_TTL_MS;
  const created = await deps.posts.createIdempotently(post, {
    key: idempotencyKey,
    expiresAt: new Date(now.getTime() + ttlMs),
  });
  if (created.ok) return ok(created.value);
  return created.error === "author-gone"
    ? err({ kind: "user-gone" })
    : err({ kind: "idempotency-key-reused" });
}
