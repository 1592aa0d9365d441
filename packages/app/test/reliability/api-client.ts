import { randomBytes } from "node:crypto";

/** A registered user and a token for them. */
export interface SignedUpUser {
  readonly id: number;
  readonly email: string;
  readonly token: string;
}

/** A JSON request, with the token when one is given. */
export function jsonRequest(method: string, body: unknown, token?: string): RequestInit {
  return {
    method,
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { "x-auth-token": token }),
    },
    body: JSON.stringify(body),
  };
}

/** Registers a new user through the API and logs in, as a client would. */
export async function signUp(baseUrl: string): Promise<SignedUpUser> {
  const email = `reliability-${randomBytes(6).toString("hex")}@example.com`;
  const password = "reliability password";
  const registered = await fetch(`${baseUrl}/api/v1/user`, jsonRequest("POST", { email, password }));
  if (registered.status !== 201) throw new Error(`registration answered ${registered.status}`);
  const { id } = (await registered.json()) as { id: number };
  const loggedIn = await fetch(`${baseUrl}/api/v1/user/login`, jsonRequest("POST", { email, password }));
  if (loggedIn.status !== 200) throw new Error(`login answered ${loggedIn.status}`);
  const { token } = (await loggedIn.json()) as { token: string };
  return { id, email, token };
}

/** Creates a post and answers its id, read from the Location header. */
export async function createPost(
  baseUrl: string,
  token: string,
  title: string,
  content = "본문",
): Promise<number> {
  const response = await fetch(`${baseUrl}/api/v1/posts`, jsonRequest("POST", { title, content }, token));
  if (response.status !== 201) throw new Error(`creating a post answered ${response.status}`);
  return idFromLocation(response.headers.get("location"));
}

/** The post id at the end of a `Location` URL. */
export function idFromLocation(location: string | null): number {
  const match = /\/api\/v1\/posts\/(\d+)$/.exec(location ?? "");
  if (match?.[1] === undefined) throw new Error(`not a post location: ${location}`);
  return Number(match[1]);
}

/** A response, read whole, with the time it took from the call. */
export interface TimedResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
  readonly elapsedMs: number;
}

/** `fetch` that reads the whole body and measures how long that took; network errors reject. */
export async function timedFetch(url: string, init: RequestInit = {}): Promise<TimedResponse> {
  const started = performance.now();
  const response = await fetch(url, init);
  const body = await response.text();
  return { status: response.status, headers: response.headers, body, elapsedMs: performance.now() - started };
}
