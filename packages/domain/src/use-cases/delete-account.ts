import type { DomainErrorOf } from "../errors.js";
import type { Principal } from "../principal.js";
import { err, ok, type Result } from "../result.js";
import type { Dependencies } from "./dependencies.js";

/**
 * Deletes the principal's account and every post they wrote, in one step. Fails with
 * "user-gone" when the account was deleted already.
 */
export async function deleteAccount(
  deps: Pick<Dependencies, "users">,
  principal: Principal,
): Promise<Result<void, DomainErrorOf<"user-gone">>> {
  return (await deps.users.delete(principal.userId)) ? ok(undefined) : err({ kind: "user-gone" });
}

/**
 * The name {@link deleteAccount} had before it said what it does; the same function, kept so
 * that callers of the published package keep compiling.
 * @deprecated Use {@link deleteAccount}.
 */
export const deleteMe = deleteAccount;
