import type { DomainErrorOf, FieldError } from "../errors.js";
import { parseId } from "../ids.js";
import type { ExpectedVersions } from "../ports/post-repository.js";
import type { PostChanges, ReadPost } from "../post.js";
import { checkContent, checkTitle } from "../post-rules.js";
import type { Principal } from "../principal.js";
import { err, ok, type Result } from "../result.js";
import type { Dependencies } from "./dependencies.js";
import { ownedWriteError } from "./owned-write-error.js";

/** Input of {@link patchPost}; `null` and absent fields both mean "leave unchanged". */
export interface PatchPostCommand {
  readonly principal: Principal;
  /** The id as it appeared in the request. */
  readonly postId: string;
  readonly title?: unknown;
  readonly content?: unknown;
  /**
   * The versions (`updatedAt` instants) of the post the client last saw: the change happens
   * only if the post is still at one of them. Absent: unconditional. An empty list matches
   * nothing (what a malformed precondition amounts to).
   */
  readonly expectedVersions?: ExpectedVersions;
}

/**
 * Changes the title and/or content of the principal's own post. Checks, in order:
 * neither field present → "empty-patch"; a present field invalid → "validation" (every
 * failing field listed); no such post (including an id beyond 64 bits) → "post-not-found";
 * someone else's post → "not-post-author"; `expectedVersions` given and the post's current
 * version none of them → "version-mismatch". Only present fields change, atomically with the
 * version check, and updatedAt (the new version) moves strictly forward.
 * A post that is gone while the client names versions of it has changed since they saw it:
 * "version-mismatch", so that writers racing with a deletion all learn that their version is stale.
 * Answers the post as the change left it, whole or, when its content is large, as the
 * repository's outline (see `PostRepository.update`).
 */
export async function patchPost(
  deps: Pick<Dependencies, "posts" | "clock">,
  command: PatchPostCommand,
): Promise<
  Result<
    ReadPost,
    DomainErrorOf<"empty-patch" | "validation" | "post-not-found" | "not-post-author" | "version-mismatch">
  >
> {
  const hasTitle = command.title !== undefined && command.title !== null;
  const hasContent = command.content !== undefined && command.content !== null;
  if (!hasTitle && !hasContent) return err({ kind: "empty-patch" });

  const errors: FieldError[] = [];
  const changes: { title?: string; content?: string } = {};
  if (hasTitle) {
    const problem = checkTitle(command.title);
    if (problem === undefined) changes.title = command.title as string;
    else errors.push({ field: "title", message: problem });
  }
  if (hasContent) {
    const problem = checkContent(command.content);
    if (problem === undefined) changes.content = command.content as string;
    else errors.push({ field: "content", message: problem });
  }
  if (errors.length > 0) return err({ kind: "validation", errors });

  const id = parseId(command.postId);
  if (id === undefined) return err({ kind: "post-not-found" });

  const updated = await deps.posts.update({
    id,
    authorId: command.principal.userId,
    changes: changes satisfies PostChanges,
    now: deps.clock.now(),
    ...(command.expectedVersions === undefined ? {} : { expectedVersions: command.expectedVersions }),
  });
  return updated.ok
    ? ok(updated.value)
    : err(ownedWriteError(updated.error, "modify", command.expectedVersions));
}
