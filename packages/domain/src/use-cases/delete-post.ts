import type { DomainErrorOf } from "../errors.js";
import { parseId } from "../ids.js";
import type { Principal } from "../principal.js";
import { err, ok, type Result } from "../result.js";
import type { Dependencies } from "./dependencies.js";

/** Input of {@link deletePost}. */
export interface DeletePostCommand {
  readonly principal: Principal;
  /** The id as it appeared in the request. */
  readonly postId: string;
}

/**
 * Deletes the principal's own post. Checks, in order: no such post (including an id beyond
 * 64 bits) → "post-not-found"; someone else's post → "not-post-author".
 */
export async function deletePost(
  deps: Pick<Dependencies, "posts">,
  command: DeletePostCommand,
): Promise<Result<void, DomainErrorOf<"post-not-found" | "not-post-author">>> {
  const id = parseId(command.postId);
  if (id === undefined) return err({ kind: "post-not-found" });

  const deleted = await deps.posts.delete({ id, authorId: command.principal.userId });
  if (deleted.ok) return ok(undefined);
  return deleted.error === "not-found"
    ? err({ kind: "post-not-found" })
    : err({ kind: "not-post-author", action: "delete" });
}
