import type { ConformanceCase } from "../runner/conformance-case.js";
import {
  CONTENT_REQUIRED,
  NOT_AUTHOR_TO_MODIFY,
  POST_NOT_FOUND,
  TITLE_REQUIRED,
} from "../support/contract-messages.js";
import {
  expectEmpty,
  expectEnvelope,
  expectEqual,
  expectErrorJson,
  expectFieldErrors,
  expectText,
} from "../support/expectations.js";
import { MISSING_POST_ID, POSTS } from "../support/fixture.js";
import { INVALID_TOKEN } from "../support/token-forge.js";
import { expectPostReply } from "../support/wire-shapes.js";

const section = "docs/posts.md#change-patch-apiv1postsid";

/** docs/posts.md#change-patch-apiv1postsid: modification and every numbered step of its order of outcomes. */
export const patchPostCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "step 1: an invalid token is 401 {error} first: before a non-digit id, a missing post, an empty change",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      expectErrorJson(await api.patch(`${POSTS}/abc`, { token: INVALID_TOKEN, json: { title: "t" } }));
      expectErrorJson(
        await api.patch(`${POSTS}/${MISSING_POST_ID}`, { token: INVALID_TOKEN, json: { title: "t" } }),
      );
      expectErrorJson(await api.patch(`${POSTS}/${id}`, { token: INVALID_TOKEN, json: {} }));
      expectErrorJson(
        await api.patch(`${POSTS}/${id}`, { token: INVALID_TOKEN, contentType: "text/plain", body: "x" }),
      );
    },
  },
  {
    section,
    name: "step 1: a non-digit id is the 403 envelope, with or without a valid token, before the body checks",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      for (const id of ["abc", "1a", "-1", "1.5"]) {
        const path = `${POSTS}/${id}`;
        expectEnvelope(await api.patch(path, { token: writer.token, json: { title: "t" } }), 403, path);
        expectEnvelope(await api.patch(path, { json: { title: "t" } }), 403, path);
      }
      expectEnvelope(await api.patch(`${POSTS}/abc`, { token: writer.token, json: {} }), 403, `${POSTS}/abc`);
    },
  },
  {
    section,
    name: "step 1: without a token it is the 403 envelope, before 400 and 404",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      expectEnvelope(await api.patch(`${POSTS}/${id}`, { json: { title: "t" } }), 403, `${POSTS}/${id}`);
      expectEnvelope(await api.patch(`${POSTS}/${id}`, { json: {} }), 403, `${POSTS}/${id}`);
      expectEnvelope(
        await api.patch(`${POSTS}/${MISSING_POST_ID}`, { json: { title: "t" } }),
        403,
        `${POSTS}/${MISSING_POST_ID}`,
      );
    },
  },
  {
    section,
    name: "step 1: a valid token without ROLE_USER is 403, even for the author",
    needsSecret: true,
    async run({ api, fixture, forge }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const token = await forge.guestTokenFor(writer);
      expectEnvelope(
        await api.patch(`${POSTS}/${id}`, { token, json: { title: "t" } }),
        403,
        `${POSTS}/${id}`,
      );
      expectEnvelope(await api.patch(`${POSTS}/${id}`, { token, json: {} }), 403, `${POSTS}/${id}`);
    },
  },
  {
    section,
    name: "step 2: title and content both null or absent → 400 with an EMPTY body, before 404 and 401",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const reader = await fixture.shared("reader");
      const id = await fixture.createPost(writer);
      for (const json of [{}, { title: null, content: null }, { title: null }, { other: "x", id: 1 }]) {
        expectEmpty(await api.patch(`${POSTS}/${id}`, { token: writer.token, json }), 400);
      }
      expectEmpty(await api.patch(`${POSTS}/${MISSING_POST_ID}`, { token: writer.token, json: {} }), 400);
      expectEmpty(await api.patch(`${POSTS}/${id}`, { token: reader.token, json: {} }), 400);
    },
  },
  {
    section,
    name: "step 2: a present field that fails validation → 400 envelope, before 404 and 401",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const reader = await fixture.shared("reader");
      const id = await fixture.createPost(writer);
      const path = `${POSTS}/${id}`;
      expectFieldErrors(await api.patch(path, { token: writer.token, json: { title: "  " } }), path, [
        { field: "title", message: TITLE_REQUIRED },
      ]);
      expectFieldErrors(await api.patch(path, { token: writer.token, json: { content: "\u3000" } }), path, [
        { field: "content", message: CONTENT_REQUIRED },
      ]);
      expectFieldErrors(
        await api.patch(path, { token: writer.token, json: { title: 5, content: "" } }),
        path,
        [{ field: "title" }, { field: "content", message: CONTENT_REQUIRED }],
      );
      expectFieldErrors(
        await api.patch(path, { token: writer.token, json: { title: "a".repeat(256) } }),
        path,
        [{ field: "title" }],
      );
      const missing = `${POSTS}/${MISSING_POST_ID}`;
      expectFieldErrors(await api.patch(missing, { token: writer.token, json: { title: "" } }), missing, [
        { field: "title", message: TITLE_REQUIRED },
      ]);
      expectFieldErrors(await api.patch(path, { token: reader.token, json: { content: " " } }), path, [
        { field: "content", message: CONTENT_REQUIRED },
      ]);
    },
  },
  {
    section,
    name: "step 3: no such post → 404 text/plain 게시글을 찾을 수 없습니다. (also for a post just deleted)",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      expectText(
        await api.patch(`${POSTS}/${MISSING_POST_ID}`, { token: writer.token, json: { title: "t" } }),
        404,
        POST_NOT_FOUND,
      );
      const id = await fixture.createPost(writer);
      expectEmpty(await api.delete(`${POSTS}/${id}`, { token: writer.token }), 204);
      expectText(
        await api.patch(`${POSTS}/${id}`, { token: writer.token, json: { title: "t" } }),
        404,
        POST_NOT_FOUND,
      );
    },
  },
  {
    section,
    name: "step 4: not the author → 401 text/plain 게시글 작성자만 수정할 수 있습니다., and nothing changes",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const reader = await fixture.shared("reader");
      const id = await fixture.createPost(writer, { title: "작성자의 제목", content: "작성자의 본문" });
      expectText(
        await api.patch(`${POSTS}/${id}`, { token: reader.token, json: { title: "가로채기", content: "x" } }),
        401,
        NOT_AUTHOR_TO_MODIFY,
      );
      const post = expectPostReply(await api.get(`${POSTS}/${id}`));
      expectEqual(
        [post.title, post.content],
        ["작성자의 제목", "작성자의 본문"],
        "the post after the refusal",
      );
    },
  },
  {
    section,
    name: "step 6: 200 with the post; only the fields present change, null counts as absent, other properties are ignored",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer, { title: "제목 1", content: "본문 1" });
      const path = `${POSTS}/${id}`;
      const patch = async (json: unknown) =>
        expectPostReply(await api.patch(path, { token: writer.token, json }));
      let post = await patch({ title: "제목 2" });
      expectEqual([post.id, post.title, post.content], [id, "제목 2", "본문 1"], "after a title-only PATCH");
      post = await patch({ content: "본문 2" });
      expectEqual([post.title, post.content], ["제목 2", "본문 2"], "after a content-only PATCH");
      post = await patch({ title: null, content: "본문 3" });
      expectEqual(
        [post.title, post.content],
        ["제목 2", "본문 3"],
        'after {"title": null, "content": "본문 3"}',
      );
      post = await patch({
        title: "제목 4",
        content: "본문 4",
        id: id + 1,
        createdAt: "2000-01-01T00:00:00.000",
        user: { id: writer.id + 1, email: "someone@example.com" },
      });
      expectEqual(
        [post.id, post.title, post.content, post.user],
        [id, "제목 4", "본문 4", { id: writer.id, email: writer.email }],
        "after a PATCH of both with other properties",
      );
      const read = expectPostReply(await api.get(path));
      expectEqual(read, post, "GET after the PATCHes");
    },
  },
  {
    section,
    name: "concurrent PATCHes of the title and of the content lose neither (no lost update)",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const path = `${POSTS}/${id}`;
      for (let round = 1; round <= 5; round += 1) {
        const [titled, contented] = await Promise.all([
          api.patch(path, { token: writer.token, json: { title: `title ${round}` } }),
          api.patch(path, { token: writer.token, json: { content: `content ${round}` } }),
        ]);
        expectPostReply(titled);
        expectPostReply(contented);
        const post = expectPostReply(await api.get(path));
        expectEqual([post.title, post.content], [`title ${round}`, `content ${round}`], `round ${round}`);
      }
    },
  },
];
