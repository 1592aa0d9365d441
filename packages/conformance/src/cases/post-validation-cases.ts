import type { ApiClient, RequestOptions } from "../http/api-client.js";
import type { ConformanceCase } from "../runner/conformance-case.js";
import { UNICODE_WHITE_SPACE } from "../support/bodies.js";
import { CONTENT_REQUIRED, TITLE_REQUIRED } from "../support/contract-messages.js";
import { expectBodyRefused, expectEmpty, expectEqual, expectFieldErrors } from "../support/expectations.js";
import { POSTS } from "../support/fixture.js";
import { expectPostReply, postIdOfLocation } from "../support/wire-shapes.js";

const section = "docs/posts.md#title-and-content-the-rules";
const BLANKS = ["", " ", "\u3000", "\t\r\n", "\u00a0\u2003", "\u0085", UNICODE_WHITE_SPACE];
const NOT_STRINGS: readonly unknown[] = [123, true, ["x"], { text: "x" }];
const EMOJI = "😀";

/** Bodies that are not a JSON object the service can take, each as sent (docs/posts.md#title-and-content-the-rules). */
const REFUSED_BODIES: readonly { readonly label: string; readonly body: string }[] = [
  { label: "malformed JSON", body: '{"title": "t", "content": ' },
  { label: "20 000 brackets never closed", body: "[".repeat(20_000) },
  { label: "an empty body", body: "" },
  { label: "null", body: "null" },
  { label: "an array", body: "[]" },
  { label: "a string", body: '"x"' },
  { label: "a number", body: "42" },
  { label: "an array nested 10 000 deep", body: `${"[".repeat(10_000)}${"]".repeat(10_000)}` },
  { label: "__proto__", body: '{"title":"t","content":"c","__proto__":{"polluted":true}}' },
  {
    label: "constructor.prototype",
    body: '{"title":"t","content":"c","constructor":{"prototype":{"polluted":true}}}',
  },
];

/** Asserts that `value` as the title, and then as the content, is a 400 naming just that field. */
async function expectRefusedAsEither(api: ApiClient, token: string, value: unknown): Promise<void> {
  expectFieldErrors(await api.post(POSTS, { token, json: { title: value, content: "c" } }), POSTS, [
    { field: "title" },
  ]);
  expectFieldErrors(await api.post(POSTS, { token, json: { title: "t", content: value } }), POSTS, [
    { field: "content" },
  ]);
}

/** docs/posts.md#title-and-content-the-rules: what a title and a content may be, on POST and on PATCH. */
export const postValidationCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "missing, null, empty or Unicode-blank title or content → 400 with the contract's messages",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const post = (json: unknown) => api.post(POSTS, { token: writer.token, json });
      expectFieldErrors(await post({ content: "c" }), POSTS, [{ field: "title", message: TITLE_REQUIRED }]);
      expectFieldErrors(await post({ title: "t" }), POSTS, [{ field: "content", message: CONTENT_REQUIRED }]);
      expectFieldErrors(await post({ title: null, content: "c" }), POSTS, [
        { field: "title", message: TITLE_REQUIRED },
      ]);
      expectFieldErrors(await post({ title: "t", content: null }), POSTS, [
        { field: "content", message: CONTENT_REQUIRED },
      ]);
      for (const blank of BLANKS) {
        expectFieldErrors(await post({ title: blank, content: "c" }), POSTS, [
          { field: "title", message: TITLE_REQUIRED },
        ]);
        expectFieldErrors(await post({ title: "t", content: blank }), POSTS, [
          { field: "content", message: CONTENT_REQUIRED },
        ]);
      }
      expectFieldErrors(await post({ title: "\u3000", content: " " }), POSTS, [
        { field: "title", message: TITLE_REQUIRED },
        { field: "content", message: CONTENT_REQUIRED },
      ]);
    },
  },
  {
    section,
    name: 'a title or content that is not a string (123, true, ["x"], {}) → 400, never coerced',
    async run({ api, fixture }) {
      const writer = await fixture.register("notstring");
      for (const value of NOT_STRINGS) await expectRefusedAsEither(api, writer.token, value);
      expectEqual((await fixture.postsOf(writer)).length, 0, `posts of user ${writer.id}`);
    },
  },
  {
    section,
    name: "titles count code points: 255 emoji are stored intact, 256 emoji or 256 letters → 400",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const title = EMOJI.repeat(255);
      const created = await api.post(POSTS, { token: writer.token, json: { title, content: "c" } });
      expectEmpty(created, 201);
      const post = expectPostReply(await api.get(`${POSTS}/${postIdOfLocation(created)}`));
      expectEqual(post.title, title, "the title read back");
      for (const tooLong of [EMOJI.repeat(256), "a".repeat(256)]) {
        expectFieldErrors(
          await api.post(POSTS, { token: writer.token, json: { title: tooLong, content: "c" } }),
          POSTS,
          [{ field: "title" }],
        );
      }
    },
  },
  {
    section,
    name: "U+0000 anywhere, or a lone surrogate, in title or content → 400",
    async run({ api, fixture }) {
      const writer = await fixture.register("badchars");
      // JSON.stringify writes a lone surrogate as the escape "\ud800", which is what a client sends.
      for (const bad of ["a\u0000b", "\u0000", "x\ud800", "\udc00y", "\ud800"]) {
        await expectRefusedAsEither(api, writer.token, bad);
      }
      expectEqual((await fixture.postsOf(writer)).length, 0, `posts of user ${writer.id}`);
    },
  },
  {
    section,
    name: "title and content are stored exactly as sent, not trimmed, on POST and on PATCH",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const title = "  앞뒤 공백 \t";
      const content = ' \r\n여러 줄\n\ttab 😀 e\u0301 \u2028 "quoted" \\ end  ';
      const created = await api.post(POSTS, { token: writer.token, json: { title, content } });
      expectEmpty(created, 201);
      const id = postIdOfLocation(created);
      const read = expectPostReply(await api.get(`${POSTS}/${id}`));
      expectEqual({ title: read.title, content: read.content }, { title, content }, "read back after POST");
      const patched = expectPostReply(
        await api.patch(`${POSTS}/${id}`, {
          token: writer.token,
          json: { title: ` ${title}`, content: `${content}\n` },
        }),
      );
      expectEqual(
        { title: patched.title, content: patched.content },
        { title: ` ${title}`, content: `${content}\n` },
        "PATCH answer",
      );
    },
  },
  {
    section,
    name: "a 2 MiB content is stored and returned intact",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const unit = "가나다라 abc 😀 éü\n";
      const content = unit.repeat(Math.ceil((2 * 1024 * 1024) / Buffer.byteLength(unit)));
      const created = await api.post(POSTS, { token: writer.token, json: { title: "큰 본문", content } });
      expectEmpty(created, 201);
      const post = expectPostReply(await api.get(`${POSTS}/${postIdOfLocation(created)}`));
      expectEqual(post.content.length, content.length, "length of the content read back");
      expectEqual(post.content === content, true, "the content read back equals the one sent");
    },
  },
  {
    section,
    name: "malformed JSON (20 000 open brackets too), an empty body, a non-object body (an array nested 10 000 deep too), __proto__ or constructor.prototype → 400 envelope with a message and no errors, on POST and PATCH",
    async run({ api, fixture }) {
      const writer = await fixture.register("refused");
      const id = await fixture.createPost(writer, { title: "원래 제목" });
      for (const { body } of REFUSED_BODIES) {
        const options: RequestOptions = { token: writer.token, contentType: "application/json", body };
        expectBodyRefused(await api.post(POSTS, options), POSTS);
        expectBodyRefused(await api.patch(`${POSTS}/${id}`, options), `${POSTS}/${id}`);
      }
      const posts = await fixture.postsOf(writer);
      expectEqual(
        posts.map((post) => [post.id, post.title]),
        [[id, "원래 제목"]],
        `posts of user ${writer.id}`,
      );
    },
  },
];
