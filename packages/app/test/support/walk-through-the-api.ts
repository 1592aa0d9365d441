import { expect } from "vitest";
import type { PostJson } from "./wire-json.js";

const JSON_TYPE = "application/json; charset=utf-8";
const TEXT_TYPE = "text/plain; charset=utf-8";
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}$/;
const POST_KEYS = ["content", "createdAt", "id", "title", "updatedAt", "user"];

/** What the walk leaves behind for later checks. */
export interface WalkResult {
  readonly email: string;
  readonly password: string;
  readonly userId: number;
}

/**
 * One user's whole life through the real service, checking the wire format of every answer
 * (docs/posts.md, docs/authentication.md): register, log in, create three posts, page through them,
 * read one, patch it, delete it, delete the user. Timestamps are read in `utcOffset` (e.g. "+09:00"
 * for APP_TIME_ZONE=Asia/Seoul) and must be within a minute of now.
 */
export async function walkThroughTheApi(baseUrl: string, utcOffset: string): Promise<WalkResult> {
  const api = (path: string, init: RequestInit = {}) => fetch(`${baseUrl}${path}`, init);
  const json = (body: unknown, token?: string): RequestInit => ({
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { "x-auth-token": token }),
    },
    body: JSON.stringify(body),
  });
  const expectRecent = (timestamp: string) => {
    expect(timestamp).toMatch(TIMESTAMP);
    expect(Math.abs(Date.parse(`${timestamp}${utcOffset}`) - Date.now())).toBeLessThan(60_000);
  };

  // Register: the email comes back trimmed and lower-cased.
  const suffix = Math.random().toString(36).slice(2, 10);
  const email = `writer-${suffix}@example.com`;
  const password = "correct horse battery";
  const registered = await api("/api/v1/user", json({ email: `  Writer-${suffix}@Example.COM `, password }));
  expect(registered.status).toBe(201);
  expect(registered.headers.get("content-type")).toBe(JSON_TYPE);
  expect(registered.headers.get("location")).toMatch(/\/api\/v1\/user$/);
  const user = (await registered.json()) as { id: number; email: string; createdAt: string };
  expect(Object.keys(user).sort()).toEqual(["createdAt", "email", "id"]);
  expect(user.email).toBe(email);
  expect(Number.isInteger(user.id)).toBe(true);
  expectRecent(user.createdAt);

  // Log in.
  const loggedIn = await api("/api/v1/user/login", json({ email, password }));
  expect(loggedIn.status).toBe(200);
  expect(loggedIn.headers.get("content-type")).toBe(JSON_TYPE);
  const login = (await loggedIn.json()) as { tokenType: string; token: string; expiresIn: number };
  expect(login).toEqual({
    tokenType: "Bearer",
    token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
    expiresIn: 86_400_000,
  });
  const token = login.token;

  // Without a token, creating is forbidden.
  const anonymous = await api("/api/v1/posts", json({ title: "t", content: "c" }));
  expect(anonymous.status).toBe(403);
  expect(anonymous.headers.get("content-type")).toBe(JSON_TYPE);
  expect(await anonymous.json()).toMatchObject({ status: 403, error: "Forbidden", path: "/api/v1/posts" });

  // Create three posts; the body is empty and Location is absolute.
  const ids: number[] = [];
  for (const title of ["첫 번째 글", "second 🎉", "third"]) {
    const created = await api("/api/v1/posts", json({ title, content: `${title} 본문\u3000 ` }, token));
    expect(created.status).toBe(201);
    expect(await created.text()).toBe("");
    const location = created.headers.get("location") ?? "";
    expect(location).toMatch(new RegExp(`^${baseUrl}/api/v1/posts/\\d+$`));
    ids.push(Number(location.split("/").pop()));
  }
  const [firstId, secondId, thirdId] = ids as [number, number, number];
  expect(firstId < secondId && secondId < thirdId).toBe(true);

  // Page through this user's posts, newest first, two at a time.
  const firstPage = await api(`/api/v1/posts?size=2&userId=${user.id}`);
  expect(firstPage.status).toBe(200);
  expect(firstPage.headers.get("content-type")).toBe(JSON_TYPE);
  const page1 = (await firstPage.json()) as { content: PostJson[]; size: number; nextCursor: string | null };
  expect(page1.size).toBe(2);
  expect(page1.content.map((post) => post.id)).toEqual([thirdId, secondId]);
  expect(typeof page1.nextCursor).toBe("string");
  const link = firstPage.headers.get("link") ?? "";
  const next = /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
  expect(next, `Link header: ${link}`).toBeDefined();
  const nextUrl = new URL(next ?? "");
  expect(nextUrl.origin + nextUrl.pathname).toBe(`${baseUrl}/api/v1/posts`);
  expect(nextUrl.searchParams.get("size")).toBe("2");
  expect(nextUrl.searchParams.get("userId")).toBe(String(user.id));
  expect(nextUrl.searchParams.get("cursor")).toBe(page1.nextCursor);

  const secondPage = await fetch(nextUrl);
  expect(secondPage.status).toBe(200);
  expect(secondPage.headers.get("link")).toBeNull();
  const page2 = (await secondPage.json()) as { content: PostJson[]; size: number; nextCursor: string | null };
  expect(page2.content.map((post) => post.id)).toEqual([firstId]);
  expect(page2.nextCursor).toBeNull();

  // Read one: exactly the contract's properties, the author as {id, email}, text byte for byte.
  const read = await api(`/api/v1/posts/${firstId}`);
  expect(read.status).toBe(200);
  expect(read.headers.get("content-type")).toBe(JSON_TYPE);
  const post = (await read.json()) as PostJson;
  expect(Object.keys(post).sort()).toEqual(POST_KEYS);
  expect(post).toEqual({
    id: firstId,
    title: "첫 번째 글",
    content: "첫 번째 글 본문\u3000 ",
    createdAt: expect.stringMatching(TIMESTAMP),
    updatedAt: post.createdAt,
    user: { id: user.id, email },
  });
  expect(Object.keys(post.user).sort()).toEqual(["email", "id"]);
  expectRecent(post.createdAt);

  // Patch the title only: content kept, createdAt kept, updatedAt strictly later.
  const patched = await api(`/api/v1/posts/${firstId}`, {
    method: "PATCH",
    headers: { "content-type": "application/json", "x-auth-token": token },
    body: JSON.stringify({ title: "고친 제목", content: null, id: 999, user: { id: 1 } }),
  });
  expect(patched.status).toBe(200);
  expect(patched.headers.get("content-type")).toBe(JSON_TYPE);
  const after = (await patched.json()) as PostJson;
  expect(Object.keys(after).sort()).toEqual(POST_KEYS);
  expect(after).toMatchObject({
    id: firstId,
    title: "고친 제목",
    content: post.content,
    createdAt: post.createdAt,
  });
  expect(after.updatedAt).toMatch(TIMESTAMP);
  expect(after.updatedAt > after.createdAt).toBe(true);
  expect(after.user).toEqual({ id: user.id, email });

  // Delete it: 204 and gone.
  const deleted = await api(`/api/v1/posts/${firstId}`, {
    method: "DELETE",
    headers: { "x-auth-token": token },
  });
  expect(deleted.status).toBe(204);
  expect(await deleted.text()).toBe("");
  const gone = await api(`/api/v1/posts/${firstId}`);
  expect(gone.status).toBe(404);
  expect(gone.headers.get("content-type")).toBe(TEXT_TYPE);
  expect(await gone.text()).toBe("게시글을 찾을 수 없습니다.");

  // Delete the user: the posts go with them, and the token no longer names anyone.
  const me = await api("/api/v1/user", { headers: { "x-auth-token": token } });
  expect(me.status).toBe(200);
  expect(await me.json()).toEqual({ id: user.id, email, createdAt: user.createdAt });
  const deletedMe = await api("/api/v1/user", { method: "DELETE", headers: { "x-auth-token": token } });
  expect(deletedMe.status).toBe(204);
  expect(await deletedMe.text()).toBe("");
  const orphan = await api(`/api/v1/posts/${secondId}`);
  expect(orphan.status).toBe(404);
  const meAgain = await api("/api/v1/user", { headers: { "x-auth-token": token } });
  expect(meAgain.status).toBe(401);
  expect(meAgain.headers.get("content-type")).toBe(JSON_TYPE);
  expect(Object.keys((await meAgain.json()) as object)).toEqual(["error"]);

  return { email, password, userId: user.id };
}
