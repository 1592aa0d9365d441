import type { DomainErrorOf } from "../errors.js";
import type { Principal } from "../principal.js";
import { err, ok, type Result } from "../result.js";
import { type PublicUser, toPublicUser } from "../user.js";
import type { Dependencies } from "./dependencies.js";

/** The principal's own account, or "user-gone" when the token outlived the user. */
export async function getMe(
  deps: Pick<Dependencies, "users">,
  principal: Principal,
): Promise<Result<PublicUser, DomainErrorOf<"user-gone">>> {
  const user = await deps.users.findById(principal.userId);
  return user === undefined ? err({ kind: "user-gone" }) : ok(toPublicUser(user));
}
