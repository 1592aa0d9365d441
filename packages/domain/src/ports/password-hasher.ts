/** Turns passwords into slow salted hashes and checks them. */
export interface PasswordHasher {
  /** A new salted hash of `password`, in a self-describing format (e.g. PHC string). */
  hash(password: string): Promise<string>;
  /**
   * Whether `password` matches `hash`. Answers `false`, never throws, for a hash it cannot
   * read. Must not block the event loop for the duration of the hashing.
   */
  verify(hash: string, password: string): Promise<boolean>;
  /**
   * A hash of a secret nobody knows, verified when a login names an unknown email so that
   * the answer takes as long as for a known one.
   */
  readonly decoyHash: string;
}
