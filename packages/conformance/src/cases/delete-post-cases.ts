import type { ConformanceCase } from "../runner/conformance-case.js";
import { NOT_AUTHOR_TO_DELETE, POST_NOT_FOUND } from "../support/contract-messages.js";
import { expectEmpty, expectEnvelope, expectErrorJson, expectText } from "../support/expectations.js";
import { MISSING_POST_ID, POSTS } from "../support/fixture.js";
import { INVALID_TOKEN } from "../support/token-forge.js";
import { expectPostReply } from "../support/wire-shapes.js";

const section = "docs/posts.md#delete-delete-apiv1postsid";

/** docs/posts.md#delete-delete-apiv1postsid: deletion, in the order PATCH has without the body checks. */
export const deletePostCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "an invalid token is 401 {error} first: before a non-digit id or a missing post",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      expectErrorJson(await api.delete(`${POSTS}/abc`, { token: INVALID_TOKEN }));
      expectErrorJson(await api.delete(`${POSTS}/${MISSING_POST_ID}`, { token: INVALID_TOKEN }));
      expectErrorJson(await api.delete(`${POSTS}/${id}`, { token: INVALID_TOKEN }));
      expectPostReply(await api.get(`${POSTS}/${id}`));
    },
  },
  {
    section,
    name: "a non-digit id is the 403 envelope with or without a token; no token is 403 before 404",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      for (const id of ["abc", "1a", "-1"]) {
        expectEnvelope(await api.delete(`${POSTS}/${id}`, { token: writer.token }), 403, `${POSTS}/${id}`);
        expectEnvelope(await api.delete(`${POSTS}/${id}`), 403, `${POSTS}/${id}`);
      }
      const id = await fixture.createPost(writer);
      expectEnvelope(await api.delete(`${POSTS}/${id}`), 403, `${POSTS}/${id}`);
      expectEnvelope(await api.delete(`${POSTS}/${MISSING_POST_ID}`), 403, `${POSTS}/${MISSING_POST_ID}`);
      expectPostReply(await api.get(`${POSTS}/${id}`));
    },
  },
  {
    section,
    name: "a valid token without ROLE_USER is 403, even for the author",
    needsSecret: true,
    async run({ api, fixture, forge }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const token = await forge.guestTokenFor(writer);
      expectEnvelope(await api.delete(`${POSTS}/${id}`, { token }), 403, `${POSTS}/${id}`);
      expectPostReply(await api.get(`${POSTS}/${id}`));
    },
  },
  {
    section,
    name: "no such post → 404 text/plain 게시글을 찾을 수 없습니다.",
    async run({ api, fixture }) {
      const reader = await fixture.shared("reader");
      expectText(
        await api.delete(`${POSTS}/${MISSING_POST_ID}`, { token: reader.token }),
        404,
        POST_NOT_FOUND,
      );
    },
  },
  {
    section,
    name: "not the author → 401 text/plain 게시글 작성자만 삭제할 수 있습니다., and the post stays",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const reader = await fixture.shared("reader");
      const id = await fixture.createPost(writer);
      expectText(await api.delete(`${POSTS}/${id}`, { token: reader.token }), 401, NOT_AUTHOR_TO_DELETE);
      expectPostReply(await api.get(`${POSTS}/${id}`));
    },
  },
  {
    section,
    name: "the author → 204 with an empty body; the post is then 404 to GET, PATCH and DELETE",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      expectEmpty(await api.delete(`${POSTS}/${id}`, { token: writer.token }), 204);
      expectText(await api.get(`${POSTS}/${id}`), 404, POST_NOT_FOUND);
      expectText(
        await api.patch(`${POSTS}/${id}`, { token: writer.token, json: { title: "t" } }),
        404,
        POST_NOT_FOUND,
      );
      expectText(await api.delete(`${POSTS}/${id}`, { token: writer.token }), 404, POST_NOT_FOUND);
    },
  },
];
