/** A registered user as stored. `passwordHash` never leaves the service. */
export interface User {
  readonly id: number;
  /** Trimmed and lower-cased; unique. */
  readonly email: string;
  readonly passwordHash: string;
  readonly createdAt: Date;
}

/** What a user may see of their own account. */
export interface PublicUser {
  readonly id: number;
  readonly email: string;
  readonly createdAt: Date;
}

/** What a repository needs to store a new user; the id is the repository's to choose. */
export interface NewUser {
  /** Already normalized with {@link normalizeEmail}. */
  readonly email: string;
  readonly passwordHash: string;
  readonly createdAt: Date;
}

/** Drops the password hash: the only shape of a user that may be returned to a client. */
export function toPublicUser(user: User): PublicUser {
  return { id: user.id, email: user.email, createdAt: user.createdAt };
}

/**
 * The canonical form of an email address: trimmed and lower-cased, so that addresses
 * differing only in case or surrounding space name the same user.
 */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}
