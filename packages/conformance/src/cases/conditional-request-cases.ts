import type { Reply } from "../http/api-client.js";
import type { ConformanceCase } from "../runner/conformance-case.js";
import {
  NOT_AUTHOR_TO_DELETE,
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
  expectStatus,
  expectText,
  expectThat,
} from "../support/expectations.js";
import { MISSING_POST_ID, POSTS } from "../support/fixture.js";
import { INVALID_TOKEN } from "../support/token-forge.js";
import { expectPageReply, expectPostReply } from "../support/wire-shapes.js";

const section = "docs/conditional-requests.md";
const STRONG_TAG = /^"[\x21\x23-\x7e\x80-\xff]*"$/;
const ANY_TAG = /^(W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/;

/** The reply's strong entity tag, or a failure. */
function strongTagOf(reply: Reply): string {
  const tag = reply.headers.get("etag");
  expectThat(tag !== null && STRONG_TAG.test(tag), `${reply.request}: ETag`, 'a strong entity tag "…"', tag);
  return tag as string;
}

/** The reply's entity tag, weak or strong, or a failure. */
function tagOf(reply: Reply): string {
  const tag = reply.headers.get("etag");
  expectThat(tag !== null && ANY_TAG.test(tag), `${reply.request}: ETag`, 'an entity tag, "…" or W/"…"', tag);
  return tag as string;
}

function expectNoCache(reply: Reply): void {
  const header = reply.headers.get("cache-control");
  const directives = (header ?? "").split(",").map((directive) => directive.trim().toLowerCase());
  expectThat(directives.includes("no-cache"), `${reply.request}: Cache-Control`, "no-cache", header);
}

/** Fails unless the reply is 304 with no body and `tag` as its ETag. */
function expectNotModified(reply: Reply, tag: string): void {
  expectEmpty(reply, 304);
  expectEqual(reply.headers.get("etag"), tag, `${reply.request}: ETag of the 304`);
}

const strip = (tag: string) => tag.replace(/^W\//, "");

/** docs/conditional-requests.md: entity tags, If-None-Match on reads, If-Match on writes. */
export const conditionalRequestCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "GET by id has a strong ETag, the same on every GET of the same version, and Cache-Control: no-cache",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const first = await api.get(`${POSTS}/${id}`);
      expectPostReply(first);
      expectNoCache(first);
      const second = await api.get(`${POSTS}/${id}`, { token: writer.token });
      expectEqual(strongTagOf(second), strongTagOf(first), "ETag of a second GET");
    },
  },
  {
    section,
    name: "PATCH 200 has a strong ETag that changes with every PATCH and equals the next GET's",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      let before = strongTagOf(await api.get(`${POSTS}/${id}`));
      for (const json of [{ title: "바뀐 제목" }, { content: "바뀐 본문" }, { title: "바뀐 제목" }]) {
        const patched = await api.patch(`${POSTS}/${id}`, { token: writer.token, json });
        expectPostReply(patched);
        const after = strongTagOf(patched);
        expectThat(after !== before, `${patched.request}: ETag`, `other than ${before}`, after);
        expectEqual(strongTagOf(await api.get(`${POSTS}/${id}`)), after, "ETag of the GET after the PATCH");
        before = after;
      }
    },
  },
  {
    section,
    name: "list pages have an ETag (weak allowed) and Cache-Control: no-cache; it changes whenever the page would",
    async run({ api, fixture }) {
      const author = await fixture.register("pagetags");
      const first = await fixture.createPost(author, { title: "첫 글" });
      const path = `${POSTS}?userId=${author.id}`;
      const read = async () => {
        const reply = await api.get(path);
        expectPageReply(reply);
        expectNoCache(reply);
        return tagOf(reply);
      };
      const initial = await read();
      expectEqual(await read(), initial, "ETag of the same page read again");
      const second = await fixture.createPost(author, { title: "둘째 글" });
      const afterCreate = await read();
      expectThat(
        afterCreate !== initial,
        "ETag after a post was created",
        `other than ${initial}`,
        afterCreate,
      );
      expectPostReply(
        await api.patch(`${POSTS}/${first}`, { token: author.token, json: { title: "고친 글" } }),
      );
      const afterPatch = await read();
      expectThat(
        afterPatch !== afterCreate,
        "ETag after a post was changed",
        `other than ${afterCreate}`,
        afterPatch,
      );
      expectEmpty(await api.delete(`${POSTS}/${second}`, { token: author.token }), 204);
      const afterDelete = await read();
      expectThat(
        afterDelete !== afterPatch,
        "ETag after a post was deleted",
        `other than ${afterPatch}`,
        afterDelete,
      );
    },
  },
  {
    section,
    name: "If-None-Match with the current tag, its W/ form, a list holding it, or * → 304, no body, with the ETag",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const tag = strongTagOf(await api.get(`${POSTS}/${id}`));
      for (const value of [tag, `W/${tag}`, `"other", ${tag}`, `W/"other",W/${tag}`, "*"]) {
        expectNotModified(await api.get(`${POSTS}/${id}`, { headers: { "if-none-match": value } }), tag);
      }
      for (const value of ['"other"', `${tag.slice(0, -1)}x"`]) {
        expectPostReply(await api.get(`${POSTS}/${id}`, { headers: { "if-none-match": value } }));
      }
    },
  },
  {
    section,
    name: "If-None-Match on a list page → 304 for its tag (weak comparison), 200 for another",
    async run({ api, fixture }) {
      const author = await fixture.register("listmatch");
      await fixture.createPost(author);
      const path = `${POSTS}?userId=${author.id}`;
      const tag = tagOf(await api.get(path));
      for (const value of [tag, strip(tag), `W/${strip(tag)}`, `"other", ${tag}`, "*"]) {
        expectNotModified(await api.get(path, { headers: { "if-none-match": value } }), tag);
      }
      expectPageReply(await api.get(path, { headers: { "if-none-match": '"other"' } }));
      await fixture.createPost(author);
      expectPageReply(await api.get(path, { headers: { "if-none-match": tag } }));
    },
  },
  {
    section,
    name: "the 401 of an invalid token and the 404 of a missing post come before If-None-Match",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const headers = { "if-none-match": "*" };
      expectErrorJson(await api.get(`${POSTS}/${id}`, { token: INVALID_TOKEN, headers }));
      expectErrorJson(await api.get(`${POSTS}?userId=${writer.id}`, { token: INVALID_TOKEN, headers }));
      expectText(await api.get(`${POSTS}/${MISSING_POST_ID}`, { headers }), 404, POST_NOT_FOUND);
    },
  },
  {
    section,
    name: "PATCH with an If-Match that does not match (other tag, old tag, W/ form, malformed) → 412 envelope, nothing changes",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer, { title: "원본" });
      const path = `${POSTS}/${id}`;
      const old = strongTagOf(await api.get(path));
      const patched = await api.patch(path, { token: writer.token, json: { title: "현재" } });
      expectPostReply(patched);
      const current = strongTagOf(patched);
      for (const value of ['"other"', old, `W/${current}`, current.slice(1, -1), `${current}x`]) {
        const refused = await api.patch(path, {
          token: writer.token,
          headers: { "if-match": value },
          json: { title: "덮어쓰기" },
        });
        expectEnvelope(refused, 412, path);
      }
      const after = await api.get(path);
      expectEqual(expectPostReply(after).title, "현재", "title after the refusals");
      expectEqual(strongTagOf(after), current, "ETag after the refusals");
    },
  },
  {
    section,
    name: "PATCH with If-Match of the current tag, a list holding it, or * → 200",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const path = `${POSTS}/${id}`;
      let tag = strongTagOf(await api.get(path));
      for (const [index, value] of [(t: string) => t, (t: string) => `"other", ${t}`, () => "*"].entries()) {
        const reply = await api.patch(path, {
          token: writer.token,
          headers: { "if-match": value(tag) },
          json: { title: `제목 ${index}` },
        });
        expectEqual(
          expectPostReply(reply).title,
          `제목 ${index}`,
          `${reply.request} with If-Match ${value(tag)}`,
        );
        tag = strongTagOf(reply);
      }
    },
  },
  {
    section,
    name: "If-Match is judged after 400, 404 and 401 (not the author)",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const reader = await fixture.shared("reader");
      const id = await fixture.createPost(writer);
      const path = `${POSTS}/${id}`;
      const headers = { "if-match": '"does-not-match"' };
      expectEmpty(await api.patch(path, { token: writer.token, headers, json: {} }), 400);
      expectFieldErrors(await api.patch(path, { token: writer.token, headers, json: { title: " " } }), path, [
        { field: "title", message: TITLE_REQUIRED },
      ]);
      expectText(
        await api.patch(`${POSTS}/${MISSING_POST_ID}`, {
          token: writer.token,
          headers,
          json: { title: "t" },
        }),
        404,
        POST_NOT_FOUND,
      );
      expectText(
        await api.delete(`${POSTS}/${MISSING_POST_ID}`, { token: writer.token, headers }),
        404,
        POST_NOT_FOUND,
      );
      expectText(
        await api.patch(path, { token: reader.token, headers, json: { title: "t" } }),
        401,
        NOT_AUTHOR_TO_MODIFY,
      );
      expectText(await api.delete(path, { token: reader.token, headers }), 401, NOT_AUTHOR_TO_DELETE);
      const tag = strongTagOf(await api.get(path));
      expectText(
        await api.patch(path, { token: reader.token, headers: { "if-match": tag }, json: { title: "t" } }),
        401,
        NOT_AUTHOR_TO_MODIFY,
      );
    },
  },
  {
    section,
    name: "DELETE with an If-Match that does not match → 412 and the post stays; the current tag or * → 204",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const path = `${POSTS}/${id}`;
      const tag = strongTagOf(await api.get(path));
      for (const value of ['"other"', `W/${tag}`, tag.slice(1, -1)]) {
        expectEnvelope(
          await api.delete(path, { token: writer.token, headers: { "if-match": value } }),
          412,
          path,
        );
      }
      expectPostReply(await api.get(path));
      expectEmpty(await api.delete(path, { token: writer.token, headers: { "if-match": tag } }), 204);
      const other = await fixture.createPost(writer);
      expectEmpty(
        await api.delete(`${POSTS}/${other}`, { token: writer.token, headers: { "if-match": "*" } }),
        204,
      );
    },
  },
  {
    section,
    name: "without If-Match, PATCH and DELETE succeed as docs/posts.md says (never 428)",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      expectPostReply(
        await api.patch(`${POSTS}/${id}`, { token: writer.token, json: { title: "조건 없음" } }),
      );
      expectEmpty(await api.delete(`${POSTS}/${id}`, { token: writer.token }), 204);
    },
  },
  {
    section,
    name: "of 5 concurrent PATCHes with the same If-Match exactly one gets 200, the others 412",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const id = await fixture.createPost(writer);
      const path = `${POSTS}/${id}`;
      const tag = strongTagOf(await api.get(path));
      const replies = await Promise.all(
        [1, 2, 3, 4, 5].map((racer) =>
          api.patch(path, {
            token: writer.token,
            headers: { "if-match": tag },
            json: { title: `racer ${racer}` },
          }),
        ),
      );
      const statuses = replies.map((reply) => reply.status);
      expectEqual([...statuses].sort(), [200, 412, 412, 412, 412], "statuses of the concurrent PATCHes");
      const winner = replies.find((reply) => reply.status === 200) as Reply;
      expectStatus(winner, 200);
      expectEqual(
        expectPostReply(await api.get(path)).title,
        expectPostReply(winner).title,
        "title after the race (the winner's)",
      );
    },
  },
];
