import type { DomainErrorOf } from "../errors.js";
import { err, ok, type Result } from "../result.js";
import { type PublicUser, toPublicUser } from "../user.js";
import type { Credentials } from "../user-rules.js";
import type { Dependencies } from "./dependencies.js";

/**
 * Registers a user. Validation is the caller's first step, `validateCredentials`, kept apart so
 * that an adapter can refuse a throttled client between the two: bad input is then always
 * answered as bad input, and a throttled client learns nothing about which emails are taken.
 * Checks, in order: email not registered yet, compared case-insensitively ("email-taken") →
 * stored. Stores only a slow salted hash of the password.
 */
export async function registerUser(
  deps: Pick<Dependencies, "users" | "hasher" | "clock">,
  credentials: Credentials,
): Promise<Result<PublicUser, DomainErrorOf<"email-taken">>> {
  const passwordHash = await deps.hasher.hash(credentials.password);
  const created = await deps.users.create({
    email: credentials.email,
    passwordHash,
    createdAt: deps.clock.now(),
  });
  if (!created.ok) return err({ kind: "email-taken" });
  return ok(toPublicUser(created.value));
}
