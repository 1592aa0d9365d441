import type { DomainErrorOf } from "../errors.js";
import { err, ok, type Result } from "../result.js";
import { type PublicUser, toPublicUser } from "../user.js";
import { validateCredentials } from "../user-rules.js";
import type { Dependencies } from "./dependencies.js";

/** Input of {@link registerUser}, as received. */
export interface RegisterUserCommand {
  readonly email: unknown;
  readonly password: unknown;
}

/**
 * Registers a user. Checks, in order: email an address of at most 255 code points and
 * password of 8 to 128 code points (every failing field listed) → email not registered
 * yet, compared after trimming and lower-casing ("email-taken"). Stores only a slow salted
 * hash of the password.
 */
export async function registerUser(
  deps: Pick<Dependencies, "users" | "hasher" | "clock">,
  command: RegisterUserCommand,
): Promise<Result<PublicUser, DomainErrorOf<"validation" | "email-taken">>> {
  const checked = validateCredentials(command.email, command.password);
  if ("errors" in checked) return err({ kind: "validation", errors: checked.errors });

  const passwordHash = await deps.hasher.hash(checked.password);
  const created = await deps.users.create({
    email: checked.email,
    passwordHash,
    createdAt: deps.clock.now(),
  });
  if (!created.ok) return err({ kind: "email-taken" });
  return ok(toPublicUser(created.value));
}
