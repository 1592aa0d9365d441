import { describe, expect, it } from "vitest";
import { isWhole, type Post, type PostChanges, type ReadPost } from "../../post.js";
import { aPost, aUser } from "../builders.js";
import { boundedSearchContract } from "./bounded-search-contract.js";
import { conditionalWritesContract } from "./conditional-writes-contract.js";
import { idempotentCreateContract } from "./idempotent-create-contract.js";
import { keysetWalk } from "./keyset-walk.js";
import type { PostContractContext } from "./post-contract-context.js";
import type { OpenRepositories, RepositoryContractOptions } from "./repository-fixture.js";
import { searchContract } from "./search-contract.js";
import { useRepositoryFixture } from "./use-repository-fixture.js";

const CREATED_AT = new Date("2026-11-22T10:15:30.123Z");
const at = (offsetMs: number) => new Date(CREATED_AT.getTime() + offsetMs);

// About 2 MiB of UTF-8 mixing one-, three- and four-byte characters and line breaks.
const LONG_CONTENT = "Lorem ipsum 가나다라 😀 dolor\r\n".repeat(Math.ceil((2 * 1024 * 1024) / 40));

/** Texts a store must keep byte for byte: nothing trimmed, normalized or re-encoded. */
const EXACT_TEXTS: ReadonlyArray<readonly [label: string, text: string]> = [
  ["leading and trailing spaces", "  spaced out  "],
  ["Korean", "안녕하세요, 게시판입니다"],
  ["emoji, with skin tone and family sequences", "hi 😀👍🏽 👨‍👩‍👧‍👦"],
  ["a title of 255 emoji", "😀".repeat(255)],
  ["a title of 255 ASCII characters", "a".repeat(255)],
  ["ideographic spaces around text", "\u3000제목\u3000"],
  ["a decomposed accent (no Unicode normalization)", "cafe\u0301 café"],
  ["tabs and line breaks", "a\tb\nc\r\nd"],
  ["quotes, backslashes and SQL wildcards", `it's "quoted" \\ 100% _x_ ; -- drop`],
];

// A diff of two megabytes helps nobody: say where the texts part instead.
function expectSameText(actual: string | undefined, expected: string): void {
  if (actual === expected) return;
  if (actual === undefined) throw new Error("expected a text, got undefined");
  let i = 0;
  while (i < actual.length && i < expected.length && actual[i] === expected[i]) i++;
  throw new Error(
    `text differs at UTF-16 index ${i} (length ${actual.length}, expected ${expected.length}): ` +
      `${JSON.stringify(actual.slice(i, i + 20))} instead of ${JSON.stringify(expected.slice(i, i + 20))}`,
  );
}

const ids = (posts: readonly Pick<Post, "id">[]) => posts.map((post) => post.id);

/**
 * Registers the behavioural tests every `PostRepository` must pass, under
 * `describe(name)`: the port's JSDoc turned into checks, and nothing an implementation may
 * choose freely. Run it from a test file once per implementation:
 *
 * ```ts
 * postRepositoryContract("PGlite", async () => {
 *   const db = await openTestDatabase();
 *   return { posts: db.posts, users: db.users, close: () => db.close() };
 * });
 * ```
 *
 * `open` runs once for the suite (see {@link OpenRepositories} for what the tests assume of
 * the store). Checks: create and read back every field, to the millisecond, with the author's
 * id and email; a gone author; text kept exactly, up to a 2 MiB content; newest-first
 * listing with limit, exclusive `beforeId` and author filter; keyset walks that neither skip
 * nor repeat while posts are created; partial updates; the `updatedAt` rule of
 * `nextUpdatedAt`; concurrent updates of different fields; not-found before
 * not-author on update and delete; then conditional writes (expected versions, checked last and
 * atomically), idempotent creation (replays, reused keys, keys per author, concurrency, expiry,
 * the sweep, keys gone with their user) and search (case, Korean, emoji, `%`, `_`, `\`, with the
 * other filters and cursors), in files of their own.
 */
export function postRepositoryContract(
  name: string,
  open: OpenRepositories,
  options: RepositoryContractOptions = {},
): void {
  // Every contract suite opens alike: an entry point of its own (public, with its own JSDoc), and
  // the store opened once for the suite by useRepositoryFixture, which is what they share.
  describe(name, () => {
    const fixture = useRepositoryFixture(open, options);
    const spec = (title: string, body: () => Promise<void>) => it(title, body, options.testTimeoutMs);

    const newAuthor = () => aUser(fixture().users);
    const newPost = (
      author: { id: number },
      overrides: { title?: string; content?: string; createdAt?: Date } = {},
    ) => aPost(fixture().posts, author, overrides);
    // Every post these specs read by id is small, so a store answers it whole; but for the one
    // of 2 MiB, which its spec reads itself.
    const stored = async (id: number): Promise<Post | undefined> => {
      const found = await fixture().posts.findById(id);
      if (found !== undefined && !isWhole(found)) throw new Error(`post ${id} came as an outline`);
      return found;
    };
    const updateByAuthor: PostContractContext["updateByAuthor"] = (post, update) =>
      fixture().posts.update({ id: post.id, authorId: post.author.id, ...update });
    // A post id that is certain to name nothing: one that existed and was deleted.
    const goneId = async () => {
      const author = await newAuthor();
      const post = await newPost(author);
      await fixture().posts.delete({ id: post.id, authorId: author.id });
      return post.id;
    };

    describe("create and findById", () => {
      spec(
        "create answers the post with a new id, the text, createdAt as both timestamps and the author",
        async () => {
          const author = await newAuthor();
          const post = await fixture().posts.create({
            authorId: author.id,
            title: "제목",
            content: "본문",
            createdAt: CREATED_AT,
          });
          expect(post).toStrictEqual({
            id: expect.any(Number),
            title: "제목",
            content: "본문",
            createdAt: CREATED_AT,
            updatedAt: CREATED_AT,
            author: { id: author.id, email: author.email },
          });
          expect(Number.isSafeInteger(post?.id) && (post?.id ?? 0) > 0).toBe(true);
        },
      );

      spec("findById answers exactly what create answered", async () => {
        const author = await newAuthor();
        const post = await newPost(author, { title: "round", content: "trip" });
        expect(await stored(post.id)).toStrictEqual(post);
      });

      spec("keeps timestamps to the millisecond, without rounding or shifting", async () => {
        const author = await newAuthor();
        for (const createdAt of [
          new Date("2026-11-22T10:15:30.001Z"),
          new Date("2026-11-22T10:15:30.999Z"),
          // The same local hour twice as European and then American clocks go back: a store that
          // keeps wall-clock time reads one of each pair back an hour off in those time zones.
          new Date("2026-10-25T00:30:00.500Z"),
          new Date("2026-10-25T01:30:00.500Z"),
          new Date("2026-11-01T05:30:00.250Z"),
          new Date("2026-11-01T06:30:00.250Z"),
          new Date("1999-12-31T23:59:59.999Z"),
        ]) {
          const post = await newPost(author, { createdAt });
          const found = await stored(post.id);
          expect(found?.createdAt.getTime()).toBe(createdAt.getTime());
          expect(found?.updatedAt.getTime()).toBe(createdAt.getTime());
        }
      });

      spec("gives every new post a larger id than the one before", async () => {
        const author = await newAuthor();
        const first = await newPost(author);
        const second = await newPost(author);
        const third = await newPost(author);
        expect(second.id).toBeGreaterThan(first.id);
        expect(third.id).toBeGreaterThan(second.id);
      });

      spec("answers undefined and stores nothing when the author no longer exists", async () => {
        const author = await newAuthor();
        await fixture().users.delete(author.id);
        const post = await fixture().posts.create({
          authorId: author.id,
          title: "orphan",
          content: "orphan",
          createdAt: CREATED_AT,
        });
        expect(post).toBeUndefined();
        expect(await fixture().posts.listPage({ limit: 10, authorId: author.id })).toEqual([]);
      });

      spec("findById answers undefined for an id no post has", async () => {
        expect(await stored(await goneId())).toBeUndefined();
        expect(await stored(Number.MAX_SAFE_INTEGER)).toBeUndefined();
      });
    });

    describe("text is stored exactly as given", () => {
      for (const [label, text] of EXACT_TEXTS) {
        spec(`${label}: through create, findById, listPage and update`, async () => {
          const author = await newAuthor();
          const created = await newPost(author, { title: text, content: text });
          expect(created.title).toBe(text);
          expect(created.content).toBe(text);
          const found = await stored(created.id);
          expect(found?.title).toBe(text);
          expect(found?.content).toBe(text);
          const [listed] = await fixture().posts.listPage({ limit: 1, authorId: author.id });
          expect(listed?.title).toBe(text);
          expect(listed?.content).toBe(text);

          const other = await newPost(author, { title: "before", content: "before" });
          await updateByAuthor(other, { changes: { title: text, content: text }, now: at(1) });
          const updated = await stored(other.id);
          expect(updated?.title).toBe(text);
          expect(updated?.content).toBe(text);
        });
      }

      spec("a 2 MiB content round-trips through create and update", async () => {
        const author = await newAuthor();
        const post = await newPost(author, { content: LONG_CONTENT });
        expectSameText(post.content, LONG_CONTENT);
        expectSameText((await fixture().posts.findWhole(post.id))?.content, LONG_CONTENT);
        // findById may answer so large a post as an outline: the same post, its content's size.
        const found = await fixture().posts.findById(post.id);
        if (found !== undefined && !isWhole(found)) {
          const { content: _, ...rest } = post;
          expect(found).toStrictEqual({
            ...rest,
            contentBytes: new TextEncoder().encode(LONG_CONTENT).length,
          });
        } else expectSameText(found?.content, LONG_CONTENT);

        // update may answer it as an outline too: the post as changed, its new content's size.
        const changed = `${LONG_CONTENT}끝`;
        for (const changes of [{ content: changed }, { title: "retitled" }]) {
          const updated = await updateByAuthor(post, { changes, now: at(1) });
          if (!updated.ok) throw new Error(`update failed: ${updated.error}`);
          const { content: _, updatedAt: __, ...kept } = post;
          const answered = updated.value;
          expect(answered.updatedAt.getTime()).toBeGreaterThan(post.updatedAt.getTime());
          expect(answered.title).toBe(changes.title ?? post.title);
          if (isWhole(answered)) expectSameText(answered.content, changed);
          else {
            expect(answered).toStrictEqual({
              ...kept,
              title: answered.title,
              updatedAt: answered.updatedAt,
              contentBytes: new TextEncoder().encode(changed).length,
            });
          }
          // What it answered is the version stored.
          const fields = (p: ReadPost | undefined) =>
            p && {
              id: p.id,
              title: p.title,
              createdAt: p.createdAt,
              updatedAt: p.updatedAt,
              author: p.author,
            };
          expect(fields(await fixture().posts.findWhole(post.id))).toStrictEqual(fields(answered));
        }
        expectSameText((await fixture().posts.findWhole(post.id))?.content, changed);
      });
    });

    describe("listPage", () => {
      /** Two new authors' posts, created in turns: a1, b1, a2, b2, a3. */
      const interleavedPosts = async () => {
        const a = await newAuthor();
        const b = await newAuthor();
        const a1 = await newPost(a);
        const b1 = await newPost(b);
        const a2 = await newPost(a);
        const b2 = await newPost(b);
        const a3 = await newPost(a);
        return { a, b, a1, b1, a2, b2, a3 };
      };

      spec("lists newest first (id descending), each post in full", async () => {
        const author = await newAuthor();
        const first = await newPost(author, { title: "first" });
        const second = await newPost(author, { title: "second" });
        const third = await newPost(author, { title: "third" });
        expect(await fixture().posts.listPage({ limit: 3 })).toStrictEqual([third, second, first]);
        expect(await fixture().posts.listPage({ limit: 3, authorId: author.id })).toStrictEqual([
          third,
          second,
          first,
        ]);
      });

      spec("answers at most limit posts", async () => {
        const author = await newAuthor();
        const posts = [];
        for (let i = 0; i < 5; i++) posts.push(await newPost(author));
        const [p1, p2, p3, p4, p5] = ids(posts);
        expect(ids(await fixture().posts.listPage({ limit: 1, authorId: author.id }))).toEqual([p5]);
        expect(ids(await fixture().posts.listPage({ limit: 2, authorId: author.id }))).toEqual([p5, p4]);
        expect(ids(await fixture().posts.listPage({ limit: 100, authorId: author.id }))).toEqual([
          p5,
          p4,
          p3,
          p2,
          p1,
        ]);
        expect(ids(await fixture().posts.listPage({ limit: 2 }))).toEqual([p5, p4]);
      });

      spec("beforeId is exclusive: only posts with a smaller id", async () => {
        const author = await newAuthor();
        const first = await newPost(author);
        const second = await newPost(author);
        const third = await newPost(author);
        expect(
          ids(await fixture().posts.listPage({ limit: 10, beforeId: third.id, authorId: author.id })),
        ).toEqual([second.id, first.id]);
        expect(ids(await fixture().posts.listPage({ limit: 2, beforeId: third.id }))).toEqual([
          second.id,
          first.id,
        ]);
        expect(
          await fixture().posts.listPage({ limit: 10, beforeId: first.id, authorId: author.id }),
        ).toEqual([]);
      });

      spec("beforeId need not name an existing post", async () => {
        const author = await newAuthor();
        const first = await newPost(author);
        const second = await newPost(author);
        const third = await newPost(author);
        await fixture().posts.delete({ id: second.id, authorId: author.id });
        expect(
          ids(await fixture().posts.listPage({ limit: 10, beforeId: second.id, authorId: author.id })),
        ).toEqual([first.id]);
        expect(ids(await fixture().posts.listPage({ limit: 10, authorId: author.id }))).toEqual([
          third.id,
          first.id,
        ]);
      });

      spec("authorId keeps only that author's posts, newest first", async () => {
        const { a, b, a1, b1, a2, b2, a3 } = await interleavedPosts();
        expect(ids(await fixture().posts.listPage({ limit: 10, authorId: a.id }))).toEqual([
          a3.id,
          a2.id,
          a1.id,
        ]);
        expect(ids(await fixture().posts.listPage({ limit: 10, authorId: b.id }))).toEqual([b2.id, b1.id]);
        expect(ids(await fixture().posts.listPage({ limit: 2, authorId: a.id }))).toEqual([a3.id, a2.id]);
      });

      spec("authorId combines with beforeId, even when beforeId is another author's post", async () => {
        const { a, b, a1, b1, a2, b2, a3 } = await interleavedPosts();
        expect(ids(await fixture().posts.listPage({ limit: 10, authorId: a.id, beforeId: a3.id }))).toEqual([
          a2.id,
          a1.id,
        ]);
        expect(ids(await fixture().posts.listPage({ limit: 10, authorId: a.id, beforeId: b2.id }))).toEqual([
          a2.id,
          a1.id,
        ]);
        expect(ids(await fixture().posts.listPage({ limit: 1, authorId: a.id, beforeId: b1.id }))).toEqual([
          a1.id,
        ]);
        expect(ids(await fixture().posts.listPage({ limit: 10, authorId: b.id, beforeId: a3.id }))).toEqual([
          b2.id,
          b1.id,
        ]);
      });

      spec("an author without posts, or an id nobody has, gives an empty list", async () => {
        const author = await newAuthor();
        expect(await fixture().posts.listPage({ limit: 10, authorId: author.id })).toEqual([]);
        expect(await fixture().posts.listPage({ limit: 10, authorId: Number.MAX_SAFE_INTEGER })).toEqual([]);
      });

      spec(
        "a keyset walk of one author visits every post once while posts are created between pages",
        async () => {
          const author = await newAuthor();
          const existing = [];
          for (let i = 0; i < 7; i++) existing.push(await newPost(author));
          const seen = await keysetWalk(fixture().posts, { limit: 3, authorId: author.id }, () =>
            newPost(author, { title: "created while walking" }),
          );
          expect(seen).toEqual(ids(existing).reverse());
        },
      );

      spec(
        "an unfiltered keyset walk visits every post once while posts are created between pages",
        async () => {
          const a = await newAuthor();
          const b = await newAuthor();
          const existing = [];
          for (let i = 0; i < 7; i++) existing.push(await newPost(i % 2 === 0 ? a : b));
          const oldest = existing[0]?.id ?? 0;
          // Older rows (earlier tests, other suites) may follow; stop once the walk passes ours.
          const walked = await keysetWalk(
            fixture().posts,
            { limit: 3 },
            (page) => newPost(page % 2 === 0 ? b : a, { title: "created while walking" }),
            oldest,
          );
          const seen = walked.filter((id) => id >= oldest);
          expect(seen).toEqual(ids(existing).reverse());
        },
      );
    });

    describe("update", () => {
      // Each case changes what it names and keeps the other field as it was.
      const partialUpdates: ReadonlyArray<readonly [title: string, changes: PostChanges]> = [
        ["changes only the title when only the title is given", { title: "new title" }],
        ["changes only the content when only the content is given", { content: "new content" }],
        [
          "changes both when both are given, and nothing else",
          { title: "new title", content: "new content" },
        ],
      ];
      for (const [title, changes] of partialUpdates) {
        spec(title, async () => {
          const author = await newAuthor();
          const post = await newPost(author, { title: "old title", content: "old content" });
          const result = await updateByAuthor(post, { changes, now: at(1000) });
          const expected = { ...post, ...changes, updatedAt: at(1000) };
          expect(result).toStrictEqual({ ok: true, value: expected });
          expect(await stored(post.id)).toStrictEqual(expected);
        });
      }

      spec("leaves the author's other posts alone", async () => {
        const author = await newAuthor();
        const target = await newPost(author);
        const bystander = await newPost(author);
        await updateByAuthor(target, { changes: { title: "x" }, now: at(1) });
        expect(await stored(bystander.id)).toStrictEqual(bystander);
      });

      spec("fails with not-found for an id no post has, whoever asks", async () => {
        const someone = await newAuthor();
        const id = await goneId();
        expect(
          await fixture().posts.update({ id, authorId: someone.id, changes: { title: "x" }, now: at(1) }),
        ).toStrictEqual({ ok: false, error: "not-found" });
        expect(
          await fixture().posts.update({
            id: Number.MAX_SAFE_INTEGER,
            authorId: someone.id,
            changes: { title: "x" },
            now: at(1),
          }),
        ).toStrictEqual({ ok: false, error: "not-found" });
      });

      spec("fails with not-author and changes nothing when someone else asks", async () => {
        const author = await newAuthor();
        const intruder = await newAuthor();
        const post = await newPost(author);
        expect(
          await fixture().posts.update({
            id: post.id,
            authorId: intruder.id,
            changes: { title: "hijacked", content: "hijacked" },
            now: at(5000),
          }),
        ).toStrictEqual({ ok: false, error: "not-author" });
        expect(await stored(post.id)).toStrictEqual(post);
      });

      spec("stores now as updatedAt when the clock has moved past the previous updatedAt", async () => {
        const author = await newAuthor();
        const post = await newPost(author, { createdAt: CREATED_AT });
        await updateByAuthor(post, { changes: { title: "x" }, now: at(1) });
        const found = await stored(post.id);
        expect(found?.updatedAt.getTime()).toBe(at(1).getTime());
        expect(found?.createdAt.getTime()).toBe(CREATED_AT.getTime());
      });

      spec(
        "moves updatedAt one millisecond on when now has not moved, so repeated writes strictly increase it",
        async () => {
          const author = await newAuthor();
          const post = await newPost(author, { createdAt: CREATED_AT });
          const first = await updateByAuthor(post, { changes: { title: "one" }, now: CREATED_AT });
          const second = await updateByAuthor(post, { changes: { title: "two" }, now: CREATED_AT });
          expect(first.ok && first.value.updatedAt.getTime()).toBe(CREATED_AT.getTime() + 1);
          expect(second.ok && second.value.updatedAt.getTime()).toBe(CREATED_AT.getTime() + 2);
          const found = await stored(post.id);
          expect(found?.updatedAt.getTime()).toBe(CREATED_AT.getTime() + 2);
          expect(found?.createdAt.getTime()).toBe(CREATED_AT.getTime());
        },
      );

      spec("moves updatedAt forward even when the clock is behind the previous updatedAt", async () => {
        const author = await newAuthor();
        const post = await newPost(author, { createdAt: CREATED_AT });
        await updateByAuthor(post, { changes: { title: "x" }, now: at(5000) });
        const behind = await updateByAuthor(post, { changes: { title: "y" }, now: at(-60_000) });
        expect(behind.ok && behind.value.updatedAt.getTime()).toBe(at(5001).getTime());
        const found = await stored(post.id);
        expect(found?.updatedAt.getTime()).toBe(at(5001).getTime());
        expect(found?.createdAt.getTime()).toBe(CREATED_AT.getTime());
      });

      spec("keeps both fields when a title update and a content update run at the same time", async () => {
        const author = await newAuthor();
        for (let round = 0; round < 5; round++) {
          const post = await newPost(author, { title: "old title", content: "old content" });
          const [byTitle, byContent] = await Promise.all([
            updateByAuthor(post, { changes: { title: `title ${round}` }, now: CREATED_AT }),
            updateByAuthor(post, { changes: { content: `content ${round}` }, now: CREATED_AT }),
          ]);
          expect(byTitle.ok && byContent.ok).toBe(true);
          const found = await stored(post.id);
          expect({ title: found?.title, content: found?.content }).toEqual({
            title: `title ${round}`,
            content: `content ${round}`,
          });
          // Both writes landed in the same millisecond; each still moved updatedAt on.
          const stamps = [byTitle, byContent].map((r) => (r.ok ? r.value.updatedAt.getTime() : Number.NaN));
          expect(stamps.sort((x, y) => x - y)).toEqual([CREATED_AT.getTime() + 1, CREATED_AT.getTime() + 2]);
          expect(found?.updatedAt.getTime()).toBe(CREATED_AT.getTime() + 2);
        }
      });
    });

    describe("delete", () => {
      spec("removes the author's post: findById answers undefined and listings skip it", async () => {
        const author = await newAuthor();
        const kept = await newPost(author);
        const doomed = await newPost(author);
        expect(await fixture().posts.delete({ id: doomed.id, authorId: author.id })).toStrictEqual({
          ok: true,
          value: undefined,
        });
        expect(await stored(doomed.id)).toBeUndefined();
        expect(ids(await fixture().posts.listPage({ limit: 10, authorId: author.id }))).toEqual([kept.id]);
        expect(await stored(kept.id)).toStrictEqual(kept);
      });

      spec("fails with not-found for an id no post has, and for a post deleted already", async () => {
        const author = await newAuthor();
        const post = await newPost(author);
        await fixture().posts.delete({ id: post.id, authorId: author.id });
        expect(await fixture().posts.delete({ id: post.id, authorId: author.id })).toStrictEqual({
          ok: false,
          error: "not-found",
        });
        expect(
          await fixture().posts.delete({ id: Number.MAX_SAFE_INTEGER, authorId: author.id }),
        ).toStrictEqual({
          ok: false,
          error: "not-found",
        });
      });

      spec("fails with not-found, not not-author, when someone else names a post that is gone", async () => {
        const intruder = await newAuthor();
        expect(await fixture().posts.delete({ id: await goneId(), authorId: intruder.id })).toStrictEqual({
          ok: false,
          error: "not-found",
        });
      });

      spec("fails with not-author and keeps the post when someone else asks", async () => {
        const author = await newAuthor();
        const intruder = await newAuthor();
        const post = await newPost(author);
        expect(await fixture().posts.delete({ id: post.id, authorId: intruder.id })).toStrictEqual({
          ok: false,
          error: "not-author",
        });
        expect(await stored(post.id)).toStrictEqual(post);
      });
    });

    const context = { fixture, spec, newAuthor, newPost, stored, updateByAuthor };
    conditionalWritesContract(context);
    idempotentCreateContract(context);
    searchContract(context);
    boundedSearchContract(context);
  });
}
