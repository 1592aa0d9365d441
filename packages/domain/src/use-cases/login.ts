import type { DomainErrorOf } from "../errors.js";
import { claimsFor, type IssuedToken } from "../ports/token-issuer.js";
import { err, ok, type Result } from "../result.js";
import { parseEmail } from "../user-rules.js";
import type { Dependencies } from "./dependencies.js";

/** Input of {@link login}, as received. */
export interface LoginCommand {
  readonly email: unknown;
  readonly password: unknown;
}

/**
 * Exchanges an email and password for a signed token. An unknown email, a wrong password,
 * and input that could never match (not strings, not an address) all fail with the same
 * "invalid-credentials", and the hasher runs in every case that reaches it, so neither the
 * answer nor its timing tells whether an email is registered.
 */
export async function login(
  deps: Pick<Dependencies, "users" | "hasher" | "tokens">,
  command: LoginCommand,
): Promise<Result<IssuedToken, DomainErrorOf<"invalid-credentials">>> {
  const email = parseEmail(command.email);
  const password = typeof command.password === "string" ? command.password : undefined;
  if (email === undefined || password === undefined) return err({ kind: "invalid-credentials" });

  const user = await deps.users.findByEmail(email);
  const matches = await deps.hasher.verify(user?.passwordHash ?? deps.hasher.decoyHash, password);
  if (user === undefined || !matches) return err({ kind: "invalid-credentials" });

  return ok(await deps.tokens.issue(claimsFor(user)));
}
