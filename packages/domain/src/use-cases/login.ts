import type { DomainErrorOf } from "../errors.js";
import { claimsFor, type IssuedToken } from "../ports/token-issuer.js";
import { err, ok, type Result } from "../result.js";
import { illFormedCredentialFields, parseEmail } from "../user-rules.js";
import type { Dependencies } from "./dependencies.js";

/** Input of {@link login}, as received. */
export interface LoginCommand {
  readonly email: unknown;
  readonly password: unknown;
}

/**
 * Exchanges an email and password for a signed token. Text that is not well-formed Unicode (a
 * lone surrogate) is a "validation" error, as at registration: the hasher would read it as
 * U+FFFD and so accept another password. An unknown email, a wrong password, and other input
 * that could never match (not strings, not an address) all fail with the same
 * "invalid-credentials", and the hasher runs in every case that reaches it, so neither the
 * answer nor its timing tells whether an email is registered.
 */
export async function login(
  deps: Pick<Dependencies, "users" | "hasher" | "tokens">,
  command: LoginCommand,
): Promise<Result<IssuedToken, DomainErrorOf<"invalid-credentials" | "validation">>> {
  const illFormed = illFormedCredentialFields(command.email, command.password);
  if (illFormed.length > 0) return err({ kind: "validation", errors: illFormed });
  const email = parseEmail(command.email);
  const password = typeof command.password === "string" ? command.password : undefined;
  if (email === undefined || password === undefined) return err({ kind: "invalid-credentials" });

  const user = await deps.users.findByEmail(email);
  const matches = await deps.hasher.verify(user?.passwordHash ?? deps.hasher.decoyHash, password);
  if (user === undefined || !matches) return err({ kind: "invalid-credentials" });

  return ok(await deps.tokens.issue(claimsFor(user)));
}
