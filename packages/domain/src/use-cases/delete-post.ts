import type { DomainErrorOf } from "../errors.js";
import { parseId } from "../ids.js";
import type { ExpectedVersions } from "../ports/post-repository.js";
import type { Principal } from "../principal.js";
import { err, ok, type Result } from "../result.js";
import type { Dependencies } from "./dependencies.js";
import { ownedWriteError } from "./owned-write-error.js";

/** Input of {@link deletePost}. */
export interface DeletePostCommand {
  readonly principal: Principal;
  /** The id as it appeared in the request. */
  readonly postId: string;
  /**
   * The versions (`updatedAt` instants) of the post the client last saw: the deletion happens
   * only if the post is still at one of them. Absent: unconditional. An empty list matches
   * nothing (what a malformed precondition amounts to).
   */
  readonly expectedVersions?: ExpectedVersions;
}

/**
 * Deletes the principal's own post. Checks, in order: no such post (including an id beyond
 * 64 bits) → "post-not-found"; someone else's post → "not-post-author"; `expectedVersions`
 * given and the post's current version none of them → "version-mismatch". The check of the
 * version and the deletion are one atomic step.
 * A post that is gone while the client names versions of it has changed since they saw it:
 * "version-mismatch", so that writers racing with a deletion all learn that their version is stale.
 */
export async function deletePost(
  deps: Pick<Dependencies, "posts">,
  command: DeletePostCommand,
): Promise<Result<void, DomainErrorOf<"post-not-found" | "not-post-author" | "version-mismatch">>> {
  const id = parseId(command.postId);
  if (id === undefined) return err({ kind: "post-not-found" });

  const deleted = await deps.posts.delete({
    id,
    authorId: command.principal.userId,
    ...(command.expectedVersions === undefined ? {} : { expectedVersions: command.expectedVersions }),
  });
  return deleted.ok ? ok(undefined) : err(ownedWriteError(deleted.error, "delete", command.expectedVersions));
}
