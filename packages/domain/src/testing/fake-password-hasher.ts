import type { PasswordHasher } from "../ports/password-hasher.js";

/**
 * A fast, reversible-looking stand-in for a real hasher, for tests only: it keeps the
 * contract's shape (verify against the decoy is false) and counts calls, so tests can prove
 * the hasher ran for an unknown email.
 */
export class FakePasswordHasher implements PasswordHasher {
  readonly decoyHash = "fake$decoy";
  /** How many times `verify` ran. */
  verifications = 0;

  /** A tagged copy of the password; never use outside tests. */
  async hash(password: string): Promise<string> {
    return `fake$${password}`;
  }

  /** Whether the hash is the tagged copy of the password; the decoy never matches. */
  async verify(hash: string, password: string): Promise<boolean> {
    this.verifications++;
    return hash !== this.decoyHash && hash === `fake$${password}`;
  }
}
