import type { AddressInfo } from "node:net";
import { connect, type Socket } from "node:net";
import type { Post } from "@posts/domain";
import { aPost } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";
import { expectEnvelope } from "../support/expectations.js";
import { headOnly } from "../support/head-only.js";
import { outliningRepository } from "../support/outlining-repository.js";
import { send } from "../support/send-request.js";
import { buildTestApp, type TestApp } from "../support/test-app.js";

// Over the 64 KiB above which a body waits for room, with escapes and characters beyond ASCII.
const LARGE = `"큰 글" 😀\n${"x".repeat(70_000)}`;
// Room for one such body or post at a time, and a short wait.
const SETTINGS = { budgetBytes: 80_000, bodyBudgetBytes: 80_000, waitMs: 300 };

const metricsOf = async (testApp: TestApp) =>
  (await testApp.app.inject({ method: "GET", url: "/metrics" })).body;

/** A gate that the repository's whole reads wait behind until `open` is called. */
function aGate(): { readonly opened: Promise<void>; readonly open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * A POST whose headers and first `sent` bytes of a `length`-byte body went out over a socket of
 * its own, the rest held back: the request holds its body's room until the socket is destroyed.
 */
function stalledPost(port: number, token: string, length: number, sent: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(
        "POST /api/v1/posts HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
          `X-AUTH-TOKEN: ${token}\r\nContent-Length: ${length}\r\n\r\n${"{".padEnd(sent, " ")}`,
      );
      resolve(socket);
    });
    socket.on("error", reject);
  });
}

describe("large writes within a budget", () => {
  it("makes a large body wait for room before it is read, and answers 503 with Retry-After, changing nothing, once the wait runs out", async () => {
    const testApp = await buildTestApp({ largePosts: SETTINGS });
    await testApp.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = testApp.app.server.address() as AddressInfo;
    let holder: Socket | undefined;
    try {
      const author = await testApp.aUserWithToken();
      const post = await aPost(testApp.deps.posts, author, { title: "before", content: "before" });
      const headers = { "x-auth-token": author.token, "content-type": "application/json" };
      const patch = (body: object, extra: Record<string, string> = {}) =>
        send(port, {
          method: "PATCH",
          path: `/api/v1/posts/${post.id}`,
          headers: { ...headers, ...extra },
          body: JSON.stringify(body),
        });
      const create = (extra: Record<string, string> = {}) =>
        send(port, {
          method: "POST",
          path: "/api/v1/posts",
          headers: { ...headers, ...extra },
          body: JSON.stringify({ title: "new", content: LARGE }),
        });
      const postsNow = async () => (await testApp.deps.posts.listPage({ limit: 100 })).length;

      holder = await stalledPost(port, author.token, 70_100, 1000);
      await expect.poll(() => metricsOf(testApp)).toMatch(/^large_body_bytes_held 70100$/m);

      for (const refused of [
        await patch({ content: LARGE }),
        await create(),
        // A chunked body is read until it is large, then waits as one of a declared length does.
        await create({ "transfer-encoding": "chunked" }),
      ]) {
        expect(refused.status).toBe(503);
        expect(refused.headers["retry-after"]).toBe("5");
        expect(JSON.parse(refused.body)).toMatchObject({ status: 503, error: "Service Unavailable" });
      }
      // A client that waits to be asked for its large body is answered 503 instead, never asked.
      const expecting = (length: number) =>
        `PATCH /api/v1/posts/${post.id} HTTP/1.1\r\nHost: localhost\r\nX-AUTH-TOKEN: ${author.token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`;
      const unasked = await headOnly(port, expecting(70_100), SETTINGS.waitMs + 1500);
      expect(unasked).toMatch(/^HTTP\/1\.1 503 /);
      expect(unasked).not.toContain("100 Continue");
      expect(await testApp.deps.posts.findWhole(post.id)).toStrictEqual(post);
      expect(await postsNow()).toBe(1);
      expect(await metricsOf(testApp)).toMatch(/^large_bodies_waiting 0$/m);

      // A body within 64 KiB never waits.
      const small = await patch({ title: "small" });
      expect(small.status).toBe(200);
      expect(JSON.parse(small.body)).toMatchObject({ title: "small", content: "before" });

      // The stalled request's room is given back when its connection goes: the same requests pass.
      holder.destroy();
      await expect.poll(() => metricsOf(testApp)).toMatch(/^large_body_bytes_held 0$/m);
      // With room, the client is asked for its body.
      expect(await headOnly(port, expecting(70_100))).toBe("HTTP/1.1 100 Continue\r\n\r\n");
      await expect.poll(() => metricsOf(testApp)).toMatch(/^large_body_bytes_held 0$/m);
      const changed = await patch({ content: LARGE });
      expect(changed.status).toBe(200);
      expect(JSON.parse(changed.body)).toMatchObject({ title: "small", content: LARGE });
      expect((await create()).status).toBe(201);
      expect((await create({ "transfer-encoding": "chunked" })).status).toBe(201);
      expect(await postsNow()).toBe(3);
      await expect.poll(() => metricsOf(testApp)).toMatch(/^large_body_bytes_held 0$/m);
    } finally {
      holder?.destroy();
      await testApp.app.close();
    }
  });

  it("answers a PATCH of a large post with the bytes and ETag of the version it made, as a GET of it does", async () => {
    const base = await buildTestApp();
    const author = await base.aUserWithToken();
    const outlined = await buildTestApp({
      deps: { ...base.deps, posts: outliningRepository(base.deps.posts) },
      largePosts: SETTINGS,
    });
    try {
      const post = await aPost(base.deps.posts, author, { title: "large", content: LARGE });
      for (const body of [
        { title: "title only" },
        { content: `${LARGE} changed` },
        { title: "both", content: LARGE },
      ]) {
        const patched = await outlined.app.inject({
          method: "PATCH",
          url: `/api/v1/posts/${post.id}`,
          headers: { "x-auth-token": author.token },
          payload: body,
        });
        expect(patched.statusCode).toBe(200);
        const read = await base.app.inject({ method: "GET", url: `/api/v1/posts/${post.id}` });
        expect(patched.body).toBe(read.body);
        expect(patched.headers.etag).toBe(read.headers.etag);
        expect(patched.headers["content-type"]).toBe(read.headers["content-type"]);
      }
      await expect.poll(() => metricsOf(outlined)).toMatch(/^large_post_bytes_held 0$/m);
    } finally {
      await base.app.close();
      await outlined.app.close();
    }
  });

  it("takes room for a large PATCH's answer before the change: 503 with Retry-After and nothing changed when none comes", async () => {
    const base = await buildTestApp();
    const author = await base.aUserWithToken();
    const gate = aGate();
    const outlined = await buildTestApp({
      deps: { ...base.deps, posts: outliningRepository(base.deps.posts, gate) },
      largePosts: SETTINGS,
    });
    try {
      const post: Post = await aPost(base.deps.posts, author, { title: "large", content: LARGE });
      // A GET of the post holds the budget's room while its read waits at the gate.
      const reading = outlined.app.inject({ method: "GET", url: `/api/v1/posts/${post.id}` });
      await expect.poll(() => metricsOf(outlined)).toMatch(/^large_post_bytes_held [1-9]/m);
      const refused = await outlined.app.inject({
        method: "PATCH",
        url: `/api/v1/posts/${post.id}`,
        headers: { "x-auth-token": author.token },
        payload: { content: `${LARGE} refused` },
      });
      expectEnvelope(refused, 503, `/api/v1/posts/${post.id}`);
      expect(refused.headers["retry-after"]).toBe("5");
      expect(await base.deps.posts.findWhole(post.id)).toStrictEqual(post);
      gate.open();
      expect((await reading).statusCode).toBe(200);
    } finally {
      await base.app.close();
      await outlined.app.close();
    }
  });

  it("answers a committed change of a large post's title after waiting for room longer than the wait, never 503; a later version read back is answered with its own ETag", async () => {
    const base = await buildTestApp();
    const author = await base.aUserWithToken();
    const gate = aGate();
    const outlined = await buildTestApp({
      deps: { ...base.deps, posts: outliningRepository(base.deps.posts, gate) },
      largePosts: SETTINGS,
    });
    try {
      const post = await aPost(base.deps.posts, author, { title: "large", content: LARGE });
      const reading = outlined.app.inject({ method: "GET", url: `/api/v1/posts/${post.id}` });
      await expect.poll(() => metricsOf(outlined)).toMatch(/^large_post_bytes_held [1-9]/m);
      let settled = false;
      const patching = outlined.app
        .inject({
          method: "PATCH",
          url: `/api/v1/posts/${post.id}`,
          headers: { "x-auth-token": author.token },
          payload: { title: "mine" },
        })
        .finally(() => {
          settled = true;
        });
      // The change committed at once; its answer waits for room, past the 300 ms wait.
      await expect.poll(async () => (await base.deps.posts.findWhole(post.id))?.title).toBe("mine");
      await new Promise((resolve) => setTimeout(resolve, 2 * SETTINGS.waitMs));
      expect(settled).toBe(false);
      // A later change commits before the answer reads the content: the answer is that version.
      const later = await base.app.inject({
        method: "PATCH",
        url: `/api/v1/posts/${post.id}`,
        headers: { "x-auth-token": author.token },
        payload: { title: "later" },
      });
      expect(later.statusCode).toBe(200);
      gate.open();
      expect((await reading).statusCode).toBe(200);
      const patched = await patching;
      expect(patched.statusCode).toBe(200);
      expect(patched.body).toBe(later.body);
      expect(patched.headers.etag).toBe(later.headers.etag);
    } finally {
      await base.app.close();
      await outlined.app.close();
    }
  });
});
