import type { DomainErrorOf } from "../errors.js";
import type { OwnedWriteFailure } from "../ports/post-repository.js";

/** The domain error for a repository's refusal to modify or delete a post. */
export function ownedWriteError(
  failure: OwnedWriteFailure,
  action: "modify" | "delete",
): DomainErrorOf<"post-not-found" | "not-post-author" | "version-mismatch"> {
  switch (failure) {
    case "not-found":
      return { kind: "post-not-found" };
    case "not-author":
      return { kind: "not-post-author", action };
    case "version-mismatch":
      return { kind: "version-mismatch" };
  }
}
