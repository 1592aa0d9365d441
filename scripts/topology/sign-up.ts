/** What {@link signUp} may be told. */
export interface SignUpOptions {
  /** Starts the fresh user's email, to tell whose it is in the database (default "topology"). */
  readonly label?: string;
  /** The base URL the login goes to, when it is not the registration's (another instance). */
  readonly logInAt?: string;
  /** How long each of the two requests may take (default 10 s). */
  readonly timeoutMs?: number;
}

/**
 * Registers a fresh user through the API at `url` (an email no other call uses) and logs it in;
 * answers its token. Throws, naming the status, when the registration answers other than 201 or
 * the login other than 200.
 */
export async function signUp(url: string, options: SignUpOptions = {}): Promise<string> {
  const credentials = {
    email: `${options.label ?? "topology"}-${Date.now()}-${Math.random().toString(36).slice(2, 10)}@example.com`,
    password: "a long password",
  };
  const post = (base: string, path: string) =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(credentials),
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
  const registered = await post(url, "/api/v1/user");
  if (registered.status !== 201) throw new Error(`registration answered ${registered.status}`);
  const loggedIn = await post(options.logInAt ?? url, "/api/v1/user/login");
  if (loggedIn.status !== 200) throw new Error(`login answered ${loggedIn.status}`);
  return ((await loggedIn.json()) as { token: string }).token;
}
