/** One input field that failed validation, with the message a client may show as is. */
export interface FieldError {
  readonly field: string;
  readonly message: string;
}

/**
 * Every expected failure of a use case, tagged by `kind`. An adapter maps each kind to its
 * response in one table, so a new kind without a mapping fails to compile there.
 */
export type DomainError =
  /** Input broke a rule; every failing field is listed. */
  | { readonly kind: "validation"; readonly errors: readonly FieldError[] }
  /** A modification that names neither title nor content. */
  | { readonly kind: "empty-patch" }
  | { readonly kind: "post-not-found" }
  | { readonly kind: "not-post-author"; readonly action: "modify" | "delete" }
  /**
   * A conditional modification or deletion named versions of the post (see
   * `PatchPostCommand.expectedVersions`) and the post's current version is none of them.
   * Decided after every other check of the write; nothing changed.
   */
  | { readonly kind: "version-mismatch" }
  /** An idempotency key that is not 1 to 255 visible ASCII characters (0x21–0x7E); nothing stored. */
  | { readonly kind: "invalid-idempotency-key" }
  /** The user created a post under this idempotency key before, with another title or content. */
  | { readonly kind: "idempotency-key-reused" }
  /** The token is valid but the user it names no longer exists. */
  | { readonly kind: "user-gone" }
  | { readonly kind: "email-taken" }
  /** Unknown email or wrong password: deliberately indistinguishable. */
  | { readonly kind: "invalid-credentials" };

/** Narrows {@link DomainError} to one kind. */
export type DomainErrorOf<K extends DomainError["kind"]> = Extract<DomainError, { kind: K }>;
