import type { DomainErrorOf } from "../errors.js";
import type { Post } from "../post.js";
import { validatePostText } from "../post-rules.js";
import type { Principal } from "../principal.js";
import { err, ok, type Result } from "../result.js";
import type { Dependencies } from "./dependencies.js";

/** Input of {@link createPost}; title and content are as received, not yet validated. */
export interface CreatePostCommand {
  readonly principal: Principal;
  readonly title: unknown;
  readonly content: unknown;
}

/**
 * Creates a post written by the principal. Checks, in order: title and content valid (every
 * failing field listed) → the principal's user still exists. The text is stored exactly as
 * sent. The caller has already established that the principal holds ROLE_USER.
 */
export async function createPost(
  deps: Pick<Dependencies, "posts" | "clock">,
  command: CreatePostCommand,
): Promise<Result<Post, DomainErrorOf<"validation" | "user-gone">>> {
  const checked = validatePostText(command.title, command.content);
  if ("errors" in checked) return err({ kind: "validation", errors: checked.errors });

  const post = await deps.posts.create({
    authorId: command.principal.userId,
    ...checked.text,
    createdAt: deps.clock.now(),
  });
  if (post === undefined) return err({ kind: "user-gone" });
  return ok(post);
}
