/** Statements that come in variants, by whether some part of the query is there. */
export type Variants<T> = Readonly<Record<"with" | "without", T>>;

/** Makes both variants of a statement (or of a group of them). */
export function bothVariants<T>(make: (present: boolean) => T): Variants<T> {
  return { with: make(true), without: make(false) };
}

/** The variant for a part of a query that is there when `part` is not `undefined`. */
export function variant(part: unknown): "with" | "without" {
  return part === undefined ? "without" : "with";
}
