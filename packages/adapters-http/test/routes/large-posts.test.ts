import type { Post } from "@posts/domain";
import { aPost } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";
import { expectEnvelope } from "../support/expectations.js";
import { outliningRepository } from "../support/outlining-repository.js";
import { buildTestApp, type TestApp } from "../support/test-app.js";

/** Posts of the app's author, the odd ones large (with escapes and characters beyond ASCII). */
async function seed(testApp: TestApp): Promise<Post[]> {
  const author = await testApp.aUserWithToken();
  const made: Post[] = [];
  for (let i = 0; i < 6; i++) {
    const content = i % 2 === 1 ? `"큰 글" 😀\n${"x".repeat(70_000)} ${i}` : `small ${i}`;
    made.push(await aPost(testApp.deps.posts, author, { title: `post ${i}`, content }));
  }
  return made;
}

describe("large posts (outlines) over HTTP", () => {
  it("answers a page and a post with the same bytes as when every post is whole, in chunks", async () => {
    const whole = await buildTestApp();
    const posts = await seed(whole);
    const outlined = await buildTestApp({
      deps: { ...whole.deps, posts: outliningRepository(whole.deps.posts) },
    });
    try {
      for (const url of [
        "/api/v1/posts?size=100",
        "/api/v1/posts?size=3",
        `/api/v1/posts/${posts[3]?.id}`,
        // Search pages: every post, the large ones (by their content), one large post alone.
        "/api/v1/posts?q=post",
        `/api/v1/posts?q=${encodeURIComponent("큰 글")}`,
        `/api/v1/posts?q=x%20${posts[5]?.content.at(-1)}`,
      ]) {
        const expected = await whole.app.inject({ method: "GET", url });
        const answered = await outlined.app.inject({ method: "GET", url });
        expect(answered.statusCode).toBe(200);
        expect(answered.json()).not.toMatchObject({ content: [] });
        expect(answered.body).toBe(expected.body);
        expect(answered.headers.etag).toBe(expected.headers.etag);
        expect(answered.headers["content-type"]).toBe(expected.headers["content-type"]);
      }
      const metrics = (await outlined.app.inject({ method: "GET", url: "/metrics" })).body;
      // Every room was given back once its answer was sent.
      expect(metrics).toMatch(/^large_post_bytes_held 0$/m);
      expect(metrics).toMatch(/^large_post_reads_waiting 0$/m);
    } finally {
      await whole.app.close();
      await outlined.app.close();
    }
  });

  it("makes a read wait for room in order, and answers 503 with Retry-After once the wait runs out", async () => {
    const base = await buildTestApp();
    const posts = await seed(base);
    let open = () => {};
    const gate = { opened: new Promise<void>((resolve) => (open = resolve)) };
    const testApp = await buildTestApp({
      deps: { ...base.deps, posts: outliningRepository(base.deps.posts, gate) },
      // Room for one large post at a time; a short wait.
      largePosts: { budgetBytes: 80_000, waitMs: 200 },
    });
    try {
      const large = `/api/v1/posts/${posts[1]?.id}`;
      const first = testApp.app.inject({ method: "GET", url: large });
      const page = testApp.app.inject({ method: "GET", url: "/api/v1/posts?size=100" });
      // Both wait: the first for its read (the gate), the page for room behind it.
      await expect
        .poll(async () => (await testApp.app.inject({ method: "GET", url: "/metrics" })).body)
        .toMatch(/^large_post_reads_waiting 1$/m);
      const refused = await page;
      expectEnvelope(refused, 503, "/api/v1/posts");
      expect(refused.headers["retry-after"]).toBe("5");
      open();
      const served = await first;
      expect(served.statusCode).toBe(200);
      expect(JSON.parse(served.body)).toMatchObject({ id: posts[1]?.id, content: posts[1]?.content });
      // With room again, the page is served whole.
      const again = await testApp.app.inject({ method: "GET", url: "/api/v1/posts?size=100" });
      expect(again.statusCode).toBe(200);
      expect(JSON.parse(again.body).content.map((p: { content: string }) => p.content)).toEqual(
        posts.map((p) => p.content).reverse(),
      );
    } finally {
      await base.app.close();
      await testApp.app.close();
    }
  });
});
