import type { ConformanceCase } from "../runner/conformance-case.js";
import { chunkedStream, jsonOfSize } from "../support/bodies.js";
import { CONTENT_REQUIRED, TITLE_REQUIRED } from "../support/contract-messages.js";
import {
  expectEmpty,
  expectEnvelope,
  expectEqual,
  expectErrorJson,
  expectFieldErrors,
  expectThat,
} from "../support/expectations.js";
import { POSTS, USER } from "../support/fixture.js";
import { INVALID_TOKEN } from "../support/token-forge.js";
import { expectPostReply, postIdOfLocation } from "../support/wire-shapes.js";

const section = "docs/posts.md#create-post-apiv1posts";

/** docs/posts.md#create-post-apiv1posts: creation and every numbered step of its order of outcomes. */
export const createPostCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "201 with an empty body and a Location: an absolute URL ending in /api/v1/posts/<id>; the post reads back as sent",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const created = await api.post(POSTS, {
        token: writer.token,
        json: { title: "새 글", content: "첫 본문" },
      });
      expectEmpty(created, 201);
      const id = postIdOfLocation(created);
      const post = expectPostReply(await api.get(`${POSTS}/${id}`));
      expectEqual(
        { title: post.title, content: post.content, user: post.user },
        { title: "새 글", content: "첫 본문", user: { id: writer.id, email: writer.email } },
        `GET ${POSTS}/${id}`,
      );
    },
  },
  {
    section,
    name: "step 1: an invalid token is 401 {error} before 403, 415, 413 and 400",
    async run({ api }) {
      const replies = [
        await api.post(POSTS, { token: INVALID_TOKEN, json: { title: "t", content: "c" } }),
        await api.post(POSTS, { token: INVALID_TOKEN, contentType: "text/plain", body: "not json" }),
        await api.post(POSTS, { token: INVALID_TOKEN, contentType: "application/json", body: '{"title":' }),
        await api.post(POSTS, { token: INVALID_TOKEN, json: {} }),
      ];
      for (const reply of replies) expectErrorJson(reply, 401);
    },
  },
  {
    section,
    name: "step 2: without a token it is the 403 envelope, before 415 and 400",
    async run({ api }) {
      const replies = [
        await api.post(POSTS, { json: { title: "t", content: "c" } }),
        await api.post(POSTS, { contentType: "text/plain", body: "not json" }),
        await api.post(POSTS, { contentType: "application/json", body: '{"title":' }),
        await api.post(POSTS, { json: {} }),
      ];
      for (const reply of replies) expectEnvelope(reply, 403, POSTS);
    },
  },
  {
    section,
    name: "step 2: a valid token without ROLE_USER is 403, before 415 and 400",
    needsSecret: true,
    async run({ api, fixture, forge }) {
      const writer = await fixture.shared("writer");
      const token = await forge.guestTokenFor(writer);
      expectEnvelope(await api.post(POSTS, { token, json: { title: "t", content: "c" } }), 403, POSTS);
      expectEnvelope(await api.post(POSTS, { token, contentType: "text/plain", body: "x" }), 403, POSTS);
      expectEnvelope(await api.post(POSTS, { token, json: {} }), 403, POSTS);
    },
  },
  {
    section,
    name: "step 3: a body that is not JSON is the 415 envelope, and nothing is created",
    async run({ api, fixture }) {
      const writer = await fixture.register("unsupported");
      const json = JSON.stringify({ title: "t", content: "c" });
      for (const contentType of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
        expectEnvelope(await api.post(POSTS, { token: writer.token, contentType, body: json }), 415, POSTS);
      }
      expectEqual((await fixture.postsOf(writer)).length, 0, `posts of user ${writer.id}`);
    },
  },
  {
    section,
    name: "step 3: a body over the limit is the 413 envelope, by Content-Length or chunked, and nothing is created",
    async run({ api, fixture, options }) {
      const writer = await fixture.register("toolarge");
      const body = jsonOfSize(options.bodyLimit + 1);
      const declared = await api.post(POSTS, { token: writer.token, contentType: "application/json", body });
      expectEnvelope(declared, 413, POSTS);
      const chunked = await api.post(POSTS, {
        token: writer.token,
        contentType: "application/json",
        body: chunkedStream(body),
      });
      expectEnvelope(chunked, 413, POSTS);
      expectEqual((await fixture.postsOf(writer)).length, 0, `posts of user ${writer.id}`);
    },
  },
  {
    section,
    name: "step 3: a body exactly at the limit is not 413",
    async run({ api, fixture, options }) {
      const writer = await fixture.register("atlimit");
      const reply = await api.post(POSTS, {
        token: writer.token,
        contentType: "application/json",
        body: jsonOfSize(options.bodyLimit),
      });
      expectThat(reply.status === 201, `${reply.request}: status`, "201", reply.status);
    },
  },
  {
    section,
    name: "step 3: 415 comes before 413 (a non-JSON body over the limit)",
    async run({ api, fixture, options }) {
      const writer = await fixture.shared("writer");
      const body = jsonOfSize(options.bodyLimit + 1);
      expectEnvelope(
        await api.post(POSTS, { token: writer.token, contentType: "text/plain", body }),
        415,
        POSTS,
      );
    },
  },
  {
    section,
    name: "step 4: validation is the 400 envelope listing every failing field",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      expectFieldErrors(await api.post(POSTS, { token: writer.token, json: {} }), POSTS, [
        { field: "title", message: TITLE_REQUIRED },
        { field: "content", message: CONTENT_REQUIRED },
      ]);
      expectFieldErrors(await api.post(POSTS, { token: writer.token, json: { title: "t" } }), POSTS, [
        { field: "content", message: CONTENT_REQUIRED },
      ]);
    },
  },
  {
    section,
    name: "step 5: the token of a deleted user is 401 {error}, after 415 and validation (400)",
    async run({ api, fixture }) {
      const gone = await fixture.register("gone");
      const deleted = await api.delete(USER, { token: gone.token });
      expectEmpty(deleted, 204);
      fixture.forget(gone);
      expectErrorJson(await api.post(POSTS, { token: gone.token, json: { title: "t", content: "c" } }), 401);
      expectFieldErrors(await api.post(POSTS, { token: gone.token, json: { content: "c" } }), POSTS, [
        { field: "title", message: TITLE_REQUIRED },
      ]);
      expectEnvelope(
        await api.post(POSTS, { token: gone.token, contentType: "text/plain", body: "x" }),
        415,
        POSTS,
      );
    },
  },
  {
    section,
    name: "properties other than title and content are ignored (id, user, timestamps)",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const created = await api.post(POSTS, {
        token: writer.token,
        json: {
          id: 1,
          title: "무시",
          content: "나머지는 무시",
          createdAt: "2000-01-01T00:00:00.000",
          updatedAt: "2000-01-01T00:00:00.000",
          user: { id: writer.id + 1000, email: "someone@example.com" },
          userId: writer.id + 1000,
        },
      });
      expectEmpty(created, 201);
      const id = postIdOfLocation(created);
      const post = expectPostReply(await api.get(`${POSTS}/${id}`));
      expectEqual(post.user, { id: writer.id, email: writer.email }, "post.user");
      expectThat(!post.createdAt.startsWith("2000-"), "post.createdAt", "set by the service", post.createdAt);
      expectThat(!post.updatedAt.startsWith("2000-"), "post.updatedAt", "set by the service", post.updatedAt);
    },
  },
];
