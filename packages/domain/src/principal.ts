/** The role every registered user holds; the only one that may write posts. */
export const ROLE_USER = "ROLE_USER";

/**
 * Who is making a request, as a verified token says. The token is trusted without a
 * database lookup, so the user it names may no longer exist.
 */
export interface Principal {
  readonly userId: number;
  readonly email: string;
  readonly authority: string;
}

/** Whether the principal may create and modify posts. */
export function hasUserRole(principal: Principal): boolean {
  return principal.authority === ROLE_USER;
}
