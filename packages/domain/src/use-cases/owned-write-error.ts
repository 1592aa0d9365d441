import type { DomainErrorOf } from "../errors.js";
import type { ExpectedVersions, OwnedWriteFailure } from "../ports/post-repository.js";

/**
 * The domain error for a repository's refusal to modify or delete a post.
 *
 * A client that names versions of the post (`expectedVersions` not empty) has seen it, so a post
 * that is gone has changed since that version: the precondition fails ("version-mismatch"), not
 * the lookup. This is what makes "of several writers holding one version, exactly one succeeds
 * and the others are told their version is stale" hold when the winner deletes the post, whether
 * a loser's statement ran before the deletion committed or after it (as on the embedded database,
 * which runs statements one at a time). Without versions, or with an empty list (a malformed
 * precondition), a missing post stays "post-not-found".
 */
export function ownedWriteError(
  failure: OwnedWriteFailure,
  action: "modify" | "delete",
  expectedVersions: ExpectedVersions | undefined,
): DomainErrorOf<"post-not-found" | "not-post-author" | "version-mismatch"> {
  switch (failure) {
    case "not-found":
      return expectedVersions !== undefined && expectedVersions.length > 0
        ? { kind: "version-mismatch" }
        : { kind: "post-not-found" };
    case "not-author":
      return { kind: "not-post-author", action };
    case "version-mismatch":
      return { kind: "version-mismatch" };
  }
}
