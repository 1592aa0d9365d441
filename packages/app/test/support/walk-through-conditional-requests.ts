import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { registerAndLogIn } from "./register-and-log-in.js";

const JSON_TYPE = "application/json; charset=utf-8";
const STRONG = /^"[\x21\x23-\x7e]+"$/;
const WEAK = /^W\/"[\x21\x23-\x7e]+"$/;

/**
 * What a client of docs/conditional-requests.md, docs/idempotency.md and docs/posts.md#search does,
 * through the real service: an idempotent retry of a creation (replayed, then 422 for other text),
 * revalidation of a post and of a page with their ETags (304), a conditional PATCH (412 on a stale
 * tag, then 200), a conditional DELETE, and a search paged through its Link.
 */
export async function walkThroughConditionalRequests(baseUrl: string): Promise<void> {
  const api = (path: string, init: RequestInit = {}) => fetch(new URL(path, baseUrl), init);
  const { token, userId } = await registerAndLogIn(baseUrl);
  const write = (method: string, body: unknown, headers: Record<string, string> = {}): RequestInit => ({
    method,
    headers: { "content-type": "application/json", "x-auth-token": token, ...headers },
    body: JSON.stringify(body),
  });
  const expectEnvelope = async (response: Response, status: number, error: string) => {
    expect({ status: response.status, type: response.headers.get("content-type") }).toEqual({
      status,
      type: JSON_TYPE,
    });
    expect(await response.json()).toMatchObject({ status, error, message: expect.any(String) });
  };

  // An idempotent retry: the same key and text answer the same Location and create nothing.
  const key = randomUUID();
  const created = await api(
    "/api/v1/posts",
    write("POST", { title: "Retry Me", content: "once" }, { "idempotency-key": key }),
  );
  expect(created.status).toBe(201);
  expect(created.headers.get("idempotent-replayed")).toBeNull();
  const location = created.headers.get("location") ?? "";
  expect(location).toMatch(/\/api\/v1\/posts\/\d+$/);
  const retried = await api(
    "/api/v1/posts",
    write("POST", { title: "Retry Me", content: "once" }, { "idempotency-key": key }),
  );
  expect({ status: retried.status, location: retried.headers.get("location") }).toEqual({
    status: 201,
    location,
  });
  expect(retried.headers.get("idempotent-replayed")).toBe("true");
  expect(await retried.text()).toBe("");
  await expectEnvelope(
    await api(
      "/api/v1/posts",
      write("POST", { title: "Retry Me", content: "twice" }, { "idempotency-key": key }),
    ),
    422,
    "Unprocessable Entity",
  );
  const mine = await api(`/api/v1/posts?userId=${userId}`);
  expect(((await mine.json()) as { content: unknown[] }).content).toHaveLength(1);

  // Revalidation: the post's strong ETag, then 304 with no body.
  const read = await api(location);
  expect(read.status).toBe(200);
  expect(read.headers.get("cache-control")).toBe("no-cache");
  const etag = read.headers.get("etag") ?? "";
  expect(etag).toMatch(STRONG);
  const revalidated = await api(location, { headers: { "if-none-match": etag } });
  expect({ status: revalidated.status, etag: revalidated.headers.get("etag") }).toEqual({
    status: 304,
    etag,
  });
  expect(await revalidated.text()).toBe("");

  // A page's weak ETag revalidates too.
  const page = await api(`/api/v1/posts?userId=${userId}`);
  const pageTag = page.headers.get("etag") ?? "";
  expect(pageTag).toMatch(WEAK);
  expect(
    (await api(`/api/v1/posts?userId=${userId}`, { headers: { "if-none-match": pageTag } })).status,
  ).toBe(304);

  // A conditional PATCH: another editor changes the post first, so the tag read above is stale.
  const other = await api(location, write("PATCH", { content: "changed by another editor" }));
  expect(other.status).toBe(200);
  const current = other.headers.get("etag") ?? "";
  expect(current).toMatch(STRONG);
  expect(current).not.toBe(etag);
  await expectEnvelope(
    await api(location, write("PATCH", { title: "lost update" }, { "if-match": etag })),
    412,
    "Precondition Failed",
  );
  const safe = await api(location, write("PATCH", { title: "Safe Edit" }, { "if-match": current }));
  expect(safe.status).toBe(200);
  expect(await safe.json()).toMatchObject({ title: "Safe Edit", content: "changed by another editor" });
  const latest = safe.headers.get("etag") ?? "";
  expect((await api(location, { headers: { "if-none-match": latest } })).status).toBe(304);
  expect((await api(location, { headers: { "if-none-match": etag } })).status).toBe(200);
  expect(
    (await api(`/api/v1/posts?userId=${userId}`, { headers: { "if-none-match": pageTag } })).status,
  ).toBe(200);

  // A search: ASCII case ignored, % literal, paged with q kept in the Link.
  for (const title of ["50% off SEARCHABLE", "searchable, but 50 off", "Searchable 100%"]) {
    expect((await api("/api/v1/posts", write("POST", { title, content: "검색 본문" }))).status).toBe(201);
  }
  const found: string[] = [];
  let next: string | undefined =
    `/api/v1/posts?userId=${userId}&size=1&q=${encodeURIComponent("searchable")}`;
  while (next !== undefined) {
    const response: Response = await api(next);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { content: { title: string }[]; nextCursor: string | null };
    found.push(...body.content.map((post) => post.title));
    const link = /^<([^>]+)>; rel="next"$/.exec(response.headers.get("link") ?? "")?.[1];
    if (link !== undefined) expect(new URL(link).searchParams.get("q")).toBe("searchable");
    next = body.nextCursor === null ? undefined : link;
  }
  expect(found).toEqual(["Searchable 100%", "searchable, but 50 off", "50% off SEARCHABLE"]);
  const percent = await api(`/api/v1/posts?userId=${userId}&q=${encodeURIComponent("50%")}`);
  expect(
    ((await percent.json()) as { content: { title: string }[] }).content.map((post) => post.title),
  ).toEqual(["50% off SEARCHABLE"]);
  const korean = await api(`/api/v1/posts?userId=${userId}&q=${encodeURIComponent("검색")}`);
  expect(((await korean.json()) as { content: unknown[] }).content).toHaveLength(3);

  // A conditional DELETE: a stale tag is refused, the current one deletes.
  await expectEnvelope(
    await api(location, { method: "DELETE", headers: { "x-auth-token": token, "if-match": current } }),
    412,
    "Precondition Failed",
  );
  const deleted = await api(location, {
    method: "DELETE",
    headers: { "x-auth-token": token, "if-match": latest },
  });
  expect(deleted.status).toBe(204);
  expect((await api(location)).status).toBe(404);
}
