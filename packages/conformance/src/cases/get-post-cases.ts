import type { ConformanceCase } from "../runner/conformance-case.js";
import { POST_NOT_FOUND } from "../support/contract-messages.js";
import { expectEnvelope, expectEqual, expectText } from "../support/expectations.js";
import { POSTS } from "../support/fixture.js";
import { expectPostReply } from "../support/wire-shapes.js";

const section = "docs/posts.md#read-one-get-apiv1postsid";

/** docs/posts.md#read-one-get-apiv1postsid: reading one post, and ids that name none. */
export const getPostCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "anyone reads a post: 200 without a token, the same with one",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const reader = await fixture.shared("reader");
      const id = await fixture.createPost(writer, { title: "공개 글" });
      const anonymous = expectPostReply(await api.get(`${POSTS}/${id}`));
      const authenticated = expectPostReply(await api.get(`${POSTS}/${id}`, { token: reader.token }));
      expectEqual(authenticated, anonymous, "the post read with a token");
      expectEqual(anonymous.title, "공개 글", "post.title");
    },
  },
  {
    section,
    name: "no such post → 404 text/plain 게시글을 찾을 수 없습니다.; a non-digit id is a path that does not exist: 404 envelope",
    async run({ api }) {
      expectText(await api.get(`${POSTS}/0`), 404, POST_NOT_FOUND);
      for (const id of ["abc", "1a", "-1"]) {
        expectEnvelope(await api.get(`${POSTS}/${id}`), 404, `${POSTS}/${id}`);
      }
    },
  },
  {
    section,
    name: "ids of digits beyond 64 bits name no post: 404 text on GET, PATCH and DELETE, never 500",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      for (const id of ["9223372036854775808", "99999999999999999999", "1".repeat(40)]) {
        const path = `${POSTS}/${id}`;
        expectText(await api.get(path), 404, POST_NOT_FOUND);
        expectText(await api.patch(path, { token: writer.token, json: { title: "t" } }), 404, POST_NOT_FOUND);
        expectText(await api.delete(path, { token: writer.token }), 404, POST_NOT_FOUND);
      }
    },
  },
];
