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
  /** The token is valid but the user it names no longer exists. */
  | { readonly kind: "user-gone" }
  | { readonly kind: "email-taken" }
  /** Unknown email or wrong password: deliberately indistinguishable. */
  | { readonly kind: "invalid-credentials" };

/** Narrows {@link DomainError} to one kind. */
export type DomainErrorOf<K extends DomainError["kind"]> = Extract<DomainError, { kind: K }>;
