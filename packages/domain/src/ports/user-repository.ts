import type { Result } from "../result.js";
import type { NewUser, User } from "../user.js";

/** Stores users. Emails arrive normalized; uniqueness is the repository's to enforce. */
export interface UserRepository {
  /** Stores a new user, or fails with "email-taken" when the email is registered already. */
  create(user: NewUser): Promise<Result<User, "email-taken">>;

  /** The user with this normalized email, or `undefined`. */
  findByEmail(email: string): Promise<User | undefined>;

  /** The user with this id, or `undefined`. */
  findById(id: number): Promise<User | undefined>;

  /** Removes the user and, in the same step, every post they wrote. Answers whether the user existed. */
  delete(id: number): Promise<boolean>;
}
