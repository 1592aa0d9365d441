import { describe, expect } from "vitest";
import type { PostContractContext } from "./post-contract-context.js";

const CREATED_AT = new Date("2026-11-22T10:15:30.123Z");
const at = (offsetMs: number) => new Date(CREATED_AT.getTime() + offsetMs);

/**
 * The post repository's conditional writes: `expectedVersions` on update and delete, checked
 * after not-found and not-author, atomically with the write. Part of `postRepositoryContract`.
 */
export function conditionalWritesContract({
  fixture,
  spec,
  newAuthor,
  newPost,
  stored,
  updateByAuthor,
}: PostContractContext): void {
  /** An author's post, another of theirs already deleted, and a user who wrote neither. */
  const postGoneAndIntruder = async () => {
    const author = await newAuthor();
    const intruder = await newAuthor();
    const post = await newPost(author);
    const gone = await newPost(author);
    await fixture().posts.delete({ id: gone.id, authorId: author.id });
    return { author, intruder, post, gone };
  };

  describe("conditional update", () => {
    spec("happens when the post is at an expected version, and answers the new version", async () => {
      const author = await newAuthor();
      const post = await newPost(author, { createdAt: CREATED_AT });
      const first = await updateByAuthor(post, {
        changes: { title: "first" },
        now: at(1000),
        expectedVersions: [post.updatedAt],
      });
      expect(first).toStrictEqual({ ok: true, value: { ...post, title: "first", updatedAt: at(1000) } });
      // Several versions: any one of them matching is enough.
      const second = await updateByAuthor(post, {
        changes: { content: "second" },
        now: at(2000),
        expectedVersions: [at(-5), at(1000), at(99_999)],
      });
      expect(second).toStrictEqual({
        ok: true,
        value: { ...post, title: "first", content: "second", updatedAt: at(2000) },
      });
    });

    spec("fails with version-mismatch and changes nothing on a stale version", async () => {
      const author = await newAuthor();
      const post = await newPost(author, { createdAt: CREATED_AT });
      const moved = await updateByAuthor(post, { changes: { title: "moved on" }, now: at(1000) });
      const stale = await updateByAuthor(post, {
        changes: { title: "stale", content: "stale" },
        now: at(2000),
        expectedVersions: [post.updatedAt],
      });
      expect(stale).toStrictEqual({ ok: false, error: "version-mismatch" });
      expect(await stored(post.id)).toStrictEqual(moved.ok ? moved.value : undefined);
    });

    spec("compares versions to the millisecond", async () => {
      const author = await newAuthor();
      const post = await newPost(author, { createdAt: CREATED_AT });
      for (const near of [at(-1), at(1)]) {
        expect(
          await updateByAuthor(post, { changes: { title: "x" }, now: at(1000), expectedVersions: [near] }),
        ).toStrictEqual({ ok: false, error: "version-mismatch" });
      }
      expect(await stored(post.id)).toStrictEqual(post);
    });

    spec("an empty list of versions matches nothing", async () => {
      const author = await newAuthor();
      const post = await newPost(author);
      expect(
        await updateByAuthor(post, { changes: { title: "x" }, now: at(1000), expectedVersions: [] }),
      ).toStrictEqual({ ok: false, error: "version-mismatch" });
      expect(await stored(post.id)).toStrictEqual(post);
    });

    spec("decides not-found, then not-author, before the version", async () => {
      const { author, intruder, post, gone } = await postGoneAndIntruder();
      const attempt = (id: number, authorId: number) =>
        fixture().posts.update({
          id,
          authorId,
          changes: { title: "x" },
          now: at(1000),
          expectedVersions: [],
        });
      expect(await attempt(gone.id, author.id)).toStrictEqual({ ok: false, error: "not-found" });
      expect(await attempt(gone.id, intruder.id)).toStrictEqual({ ok: false, error: "not-found" });
      expect(await attempt(post.id, intruder.id)).toStrictEqual({ ok: false, error: "not-author" });
      // With the right version too, someone else's post stays someone else's.
      expect(
        await fixture().posts.update({
          id: post.id,
          authorId: intruder.id,
          changes: { title: "x" },
          now: at(1000),
          expectedVersions: [post.updatedAt],
        }),
      ).toStrictEqual({ ok: false, error: "not-author" });
      expect(await stored(post.id)).toStrictEqual(post);
    });

    spec("of several updates expecting one version at the same time, exactly one happens", async () => {
      const author = await newAuthor();
      for (let round = 0; round < 3; round++) {
        const post = await newPost(author, { createdAt: CREATED_AT });
        const results = await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            updateByAuthor(post, {
              changes: i % 2 === 0 ? { title: `title ${i}` } : { content: `content ${i}` },
              now: CREATED_AT,
              expectedVersions: [post.updatedAt],
            }),
          ),
        );
        const winners = results.flatMap((result) => (result.ok ? [result.value] : []));
        expect(winners).toHaveLength(1);
        expect(results.filter((result) => !result.ok)).toEqual(
          Array.from({ length: 5 }, () => ({ ok: false, error: "version-mismatch" })),
        );
        expect(await stored(post.id)).toStrictEqual(winners[0]);
      }
    });
  });

  describe("conditional delete", () => {
    spec("happens when the post is at an expected version", async () => {
      const author = await newAuthor();
      const post = await newPost(author);
      expect(
        await fixture().posts.delete({
          id: post.id,
          authorId: author.id,
          expectedVersions: [at(-123_456), post.updatedAt],
        }),
      ).toStrictEqual({ ok: true, value: undefined });
      expect(await stored(post.id)).toBeUndefined();
    });

    spec("fails with version-mismatch and keeps the post on a stale version or an empty list", async () => {
      const author = await newAuthor();
      const post = await newPost(author, { createdAt: CREATED_AT });
      const moved = await updateByAuthor(post, { changes: { content: "moved on" }, now: at(1) });
      for (const expectedVersions of [[post.updatedAt], []]) {
        expect(
          await fixture().posts.delete({ id: post.id, authorId: author.id, expectedVersions }),
        ).toStrictEqual({ ok: false, error: "version-mismatch" });
      }
      expect(await stored(post.id)).toStrictEqual(moved.ok ? moved.value : undefined);
    });

    spec("decides not-found, then not-author, before the version", async () => {
      const { author, intruder, post, gone } = await postGoneAndIntruder();
      expect(
        await fixture().posts.delete({
          id: gone.id,
          authorId: author.id,
          expectedVersions: [gone.updatedAt],
        }),
      ).toStrictEqual({ ok: false, error: "not-found" });
      expect(
        await fixture().posts.delete({ id: post.id, authorId: intruder.id, expectedVersions: [] }),
      ).toStrictEqual({ ok: false, error: "not-author" });
      expect(await stored(post.id)).toStrictEqual(post);
    });

    spec(
      "of several deletions expecting one version at the same time, one happens; the others find no post",
      async () => {
        const author = await newAuthor();
        const post = await newPost(author);
        const results = await Promise.all(
          Array.from({ length: 6 }, () =>
            fixture().posts.delete({ id: post.id, authorId: author.id, expectedVersions: [post.updatedAt] }),
          ),
        );
        expect(results.filter((result) => result.ok)).toHaveLength(1);
        expect(results.filter((result) => !result.ok)).toEqual(
          Array.from({ length: 5 }, () => ({ ok: false, error: "not-found" })),
        );
        expect(await stored(post.id)).toBeUndefined();
      },
    );

    spec(
      "an update and a deletion expecting one version at the same time: one happens, the other says why not",
      async () => {
        const author = await newAuthor();
        for (let round = 0; round < 4; round++) {
          const post = await newPost(author, { createdAt: CREATED_AT });
          const expectedVersions = [post.updatedAt];
          const [updated, deleted] = await Promise.all([
            updateByAuthor(post, { changes: { title: "racing" }, now: at(1), expectedVersions }),
            fixture().posts.delete({ id: post.id, authorId: author.id, expectedVersions }),
          ]);
          if (updated.ok) {
            expect(deleted).toStrictEqual({ ok: false, error: "version-mismatch" });
            expect(await stored(post.id)).toStrictEqual(updated.value);
          } else {
            expect(updated).toStrictEqual({ ok: false, error: "not-found" });
            expect(deleted).toStrictEqual({ ok: true, value: undefined });
            expect(await stored(post.id)).toBeUndefined();
          }
        }
      },
    );
  });
}
