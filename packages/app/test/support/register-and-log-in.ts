import { expect } from "vitest";

/** Registers a fresh user through the API and logs them in. */
export async function registerAndLogIn(
  baseUrl: string,
): Promise<{ readonly token: string; readonly userId: number }> {
  const credentials = {
    email: `user-${Math.random().toString(36).slice(2, 10)}@example.com`,
    password: "a long password",
  };
  const post = (path: string) =>
    fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(credentials),
    });
  const registered = await post("/api/v1/user");
  expect(registered.status).toBe(201);
  const { id } = (await registered.json()) as { id: number };
  const loggedIn = await post("/api/v1/user/login");
  expect(loggedIn.status).toBe(200);
  const { token } = (await loggedIn.json()) as { token: string };
  return { token, userId: id };
}
