import type { User } from "@posts/domain";
import { parseInt8 } from "../connection/type-parsers.js";

/** A `users` row as this adapter selects it. */
export interface UserRow {
  readonly id: number;
  readonly email: string;
  readonly password_hash: string;
  readonly created_at: Date;
}

/** The one mapping from a user row to the domain's `User` (ids checked as in `toPost`). */
export function toUser(row: UserRow): User {
  return {
    id: parseInt8(row.id),
    email: row.email,
    passwordHash: row.password_hash,
    createdAt: row.created_at,
  };
}
