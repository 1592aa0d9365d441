import { describe, expect, it } from "vitest";
import type { ChangeEventLog } from "../../ports/change-event-log.js";
import type { IdempotencyKey } from "../../ports/post-repository.js";
import type { Post } from "../../post.js";
import type { PostChangeEvent } from "../../post-change-event.js";
import { aPost, aUser } from "../builders.js";
import type { RepositoryContractOptions, RepositoryFixture } from "./repository-fixture.js";
import { useRepositoryFixture } from "./use-repository-fixture.js";

/** The repositories a change event log records, and the log. */
export interface ChangeEventLogFixture extends RepositoryFixture {
  readonly events: ChangeEventLog;
}

/**
 * Opens the store {@link changeEventLogContract} runs against, once per suite. The store need
 * not be empty, but nobody else may change posts in it while the suite runs (each test counts
 * the events after the newest one it saw), and its last test forgets every event but the newest.
 */
export type OpenChangeEventLog = () => Promise<ChangeEventLogFixture>;

const T0 = new Date("2026-11-22T10:15:30.123Z");
const at = (offsetMs: number) => new Date(T0.getTime() + offsetMs);
// Numbering may happen a moment after the commit; this is how long a test waits for it.
const NUMBERING_PATIENCE_MS = 5000;

// Keys unique to this run, so that a store kept from an earlier run cannot answer for them.
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
let sequence = 0;
const aKey = () => `events-${run}-${++sequence}`;

/**
 * Registers the behavioural tests every `ChangeEventLog` must pass, with the repositories that
 * write it, under `describe(name)`. Run it once per implementation:
 *
 * ```ts
 * changeEventLogContract("in memory", async () => {
 *   const database = new InMemoryDatabase();
 *   return { posts: database.posts, users: database.users, events: database.events };
 * });
 * ```
 *
 * Checks: each creation, update and deletion of a post is one event carrying what the port
 * says, numbered next; a user's deletion is one deletion event per post of theirs; a replayed
 * idempotent creation and every refused write make none; concurrent changes are numbered
 * 1..n with no gap or repeat, and one post's concurrent updates in the order of its versions;
 * `readAfter` pages by `after` and `limit`, and stops at `maxBytes` of text as the port says; `lastNumber`; subscribers hear of new numbers;
 * `deleteNumberedBefore` forgets from the front and never the newest, and numbering goes on.
 */
export function changeEventLogContract(
  name: string,
  open: OpenChangeEventLog,
  options: RepositoryContractOptions = {},
): void {
  // Every contract suite opens alike: an entry point of its own (public, with its own JSDoc), and
  // the store opened once for the suite by useRepositoryFixture, which is what they share.
  describe(name, () => {
    const fixture = useRepositoryFixture(open, options);
    const test = (title: string, body: () => Promise<void>) => it(title, body, options.testTimeoutMs);
    const log = () => fixture().events;
    const newAuthor = () => aUser(fixture().users);
    const newPost = (author: { readonly id: number }, createdAt = T0) =>
      aPost(fixture().posts, author, { createdAt });

    /** Waits until `count` events follow `mark`, and answers every event after `mark`. */
    const eventsAfter = async (mark: number, count: number): Promise<readonly PostChangeEvent[]> => {
      const deadline = Date.now() + NUMBERING_PATIENCE_MS;
      for (;;) {
        const events = await log().readAfter(mark, 10_000);
        if (events.length >= count || Date.now() > deadline) return events;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    /** Makes a sentinel change and answers the events before its own, and its number. */
    const sentinel = async (after: number) => {
      const post = await newPost(await newAuthor());
      for (const deadline = Date.now() + NUMBERING_PATIENCE_MS; Date.now() < deadline; ) {
        const events = await log().readAfter(after, 10_000);
        const index = events.findIndex((event) => event.type === "post.created" && event.postId === post.id);
        if (index >= 0)
          return { before: events.slice(0, index), number: (events[index] as PostChangeEvent).number };
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error("the sentinel change never got its event");
    };
    /**
     * The events after `mark` up to a sentinel change made now: every event of what the test did
     * before, and nothing it did not do, since the sentinel's is numbered after them all.
     */
    const eventsBeforeSentinel = async (after: number) => (await sentinel(after)).before;
    /**
     * The number every later event will follow: a sentinel change's, once numbered, since the
     * changes before it may be numbered a moment after they commit.
     */
    const mark = async () => (await sentinel(await log().lastNumber())).number;
    const numbersOf = (events: readonly PostChangeEvent[]) => events.map((event) => event.number);
    const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

    test("a creation is one post.created event, numbered next, carrying the post as stored", async () => {
      const author = await newAuthor();
      const before = await mark();
      const post = await newPost(author);
      expect(await eventsAfter(before, 1)).toStrictEqual([
        { type: "post.created", number: before + 1, postId: post.id, occurredAt: T0, post },
      ]);
      expect(await log().lastNumber()).toBe(before + 1);
    });

    test("an update is one post.updated event carrying the post after the update", async () => {
      const post = await newPost(await newAuthor());
      const before = await mark();
      const updated = await fixture().posts.update({
        id: post.id,
        authorId: post.author.id,
        changes: { title: "고친 제목" },
        now: at(1000),
      });
      if (!updated.ok) throw new Error(updated.error);
      expect(updated.value.updatedAt).toStrictEqual(at(1000));
      expect(await eventsAfter(before, 1)).toStrictEqual([
        {
          type: "post.updated",
          number: before + 1,
          postId: post.id,
          occurredAt: at(1000),
          post: updated.value,
        },
      ]);
    });

    test("a deletion is one post.deleted event carrying the post's id only", async () => {
      const post = await newPost(await newAuthor());
      const before = await mark();
      const started = Date.now();
      expect(await fixture().posts.delete({ id: post.id, authorId: post.author.id })).toStrictEqual({
        ok: true,
        value: undefined,
      });
      const [event, ...rest] = await eventsAfter(before, 1);
      expect(rest).toEqual([]);
      expect(event).toStrictEqual({
        type: "post.deleted",
        number: before + 1,
        postId: post.id,
        occurredAt: expect.any(Date),
      });
      // The store's clock at the deletion: the machine's, give or take a few seconds.
      expect(Math.abs((event?.occurredAt.getTime() ?? 0) - started)).toBeLessThan(10_000);
    });

    test("deleting a user is one post.deleted event per post of theirs, and none for others' posts", async () => {
      const [author, other] = [await newAuthor(), await newAuthor()];
      const posts = [await newPost(author), await newPost(author), await newPost(author)];
      await newPost(other);
      const before = await mark();
      expect(await fixture().users.delete(author.id)).toBe(true);
      const events = await eventsBeforeSentinel(before);
      expect(numbersOf(events)).toEqual(range(before + 1, 3));
      expect(events.map((event) => event.type)).toEqual(["post.deleted", "post.deleted", "post.deleted"]);
      expect(events.map((event) => event.postId).sort((a, b) => a - b)).toEqual(
        posts.map((post) => post.id).sort((a, b) => a - b),
      );
    });

    test("a replayed idempotent creation and every refused write make no event", async () => {
      const [author, other] = [await newAuthor(), await newAuthor()];
      const key: IdempotencyKey = { key: aKey(), expiresAt: at(86_400_000) };
      const text = { authorId: author.id, title: "t", content: "c", createdAt: T0 };
      const first = await fixture().posts.createIdempotently(text, key);
      if (!first.ok) throw new Error(String(first.error));
      const before = await mark();
      const id = first.value.id;
      expect(await fixture().posts.createIdempotently(text, key)).toMatchObject({
        ok: true,
        value: { replayed: true },
      });
      // Someone else's post, a stale version, a post that is not there.
      const refused = [
        await fixture().posts.update({ id, authorId: other.id, changes: { title: "x" }, now: at(1) }),
        await fixture().posts.update({
          id,
          authorId: author.id,
          changes: { title: "x" },
          now: at(1),
          expectedVersions: [at(-1)],
        }),
        await fixture().posts.delete({ id, authorId: other.id }),
        await fixture().posts.delete({ id, authorId: author.id, expectedVersions: [at(-1)] }),
        await fixture().posts.delete({ id: id + 1_000_000_000, authorId: author.id }),
      ];
      expect(refused.map((result) => result.ok)).toEqual([false, false, false, false, false]);
      // A post for an author who is gone is no post.
      expect(await fixture().users.delete(other.id)).toBe(true);
      expect(await fixture().posts.create({ ...text, authorId: other.id })).toBeUndefined();
      expect(await eventsBeforeSentinel(before)).toEqual([]);
    });

    test("concurrent creations are numbered with no gap and no repeat, one event each", async () => {
      const author = await newAuthor();
      const before = await mark();
      const posts = await Promise.all(range(0, 20).map((i) => newPost(author, at(i))));
      const events = await eventsBeforeSentinel(before);
      expect(numbersOf(events)).toEqual(range(before + 1, 20));
      expect(events.map((event) => event.postId).sort((a, b) => a - b)).toEqual(
        posts.map((post) => post.id).sort((a, b) => a - b),
      );
    });

    test("concurrent updates of one post are numbered in the order of its versions", async () => {
      const post = await newPost(await newAuthor());
      const before = await mark();
      const results = await Promise.all(
        range(1, 15).map((i) =>
          fixture().posts.update({
            id: post.id,
            authorId: post.author.id,
            changes: { content: `v${i}` },
            now: at(i),
          }),
        ),
      );
      expect(results.every((result) => result.ok)).toBe(true);
      const events = await eventsBeforeSentinel(before);
      expect(numbersOf(events)).toEqual(range(before + 1, 15));
      const versions = events.map((event) =>
        event.type === "post.updated" ? event.post.updatedAt.getTime() : 0,
      );
      expect(versions).toEqual([...versions].sort((a, b) => a - b));
      expect(new Set(versions).size).toBe(15);
      // The last event carries the post as it now is.
      const last = events.at(-1) as PostChangeEvent & { post: Post };
      expect(last.post).toStrictEqual(await fixture().posts.findById(post.id));
    });

    test("readAfter pages by after and limit, and answers nothing at or past the end", async () => {
      const author = await newAuthor();
      const before = await mark();
      for (let i = 0; i < 5; i++) await newPost(author, at(i));
      await eventsAfter(before, 5);
      expect(numbersOf(await log().readAfter(before, 2))).toEqual([before + 1, before + 2]);
      expect(numbersOf(await log().readAfter(before + 2, 2))).toEqual([before + 3, before + 4]);
      expect(numbersOf(await log().readAfter(before + 4, 100))).toEqual([before + 5]);
      expect(await log().readAfter(before + 5, 100)).toEqual([]);
      expect(await log().readAfter(before + 500, 100)).toEqual([]);
      expect(await log().lastNumber()).toBe(before + 5);
    });

    test("readAfter with maxBytes stops after the event that reaches it, measured in UTF-8 bytes", async () => {
      const author = await newAuthor();
      const before = await mark();
      // Korean text is three bytes a character: a bound counted in characters would list more.
      const texts = ["가".repeat(1000), "x".repeat(2000), "나".repeat(10), "y".repeat(5000), "z"];
      const posts = [];
      for (const [i, content] of texts.entries()) {
        posts.push(
          await fixture().posts.create({ authorId: author.id, title: "t", content, createdAt: at(i) }),
        );
      }
      await eventsAfter(before, texts.length);
      const utf8 = (text: string) => new TextEncoder().encode(text).length;
      const bytes = (i: number) => 1 + utf8(texts[i] as string) + utf8(author.email);
      // The first alone reaches the bound: it is listed all the same, and alone.
      expect(numbersOf(await log().readAfter(before, 100, 1))).toEqual([before + 1]);
      // Short of the bound after the first, reached by the second: both.
      expect(numbersOf(await log().readAfter(before, 100, bytes(0) + 1))).toEqual([before + 1, before + 2]);
      // Exactly reached by the first two: the third is not read.
      expect(numbersOf(await log().readAfter(before, 100, bytes(0) + bytes(1)))).toEqual([
        before + 1,
        before + 2,
      ]);
      // Within one byte of it: the third reaches it.
      expect(numbersOf(await log().readAfter(before, 100, bytes(0) + bytes(1) + 1))).toEqual([
        before + 1,
        before + 2,
        before + 3,
      ]);
      // limit still applies, and so does after.
      expect(numbersOf(await log().readAfter(before, 2, 1_000_000))).toEqual([before + 1, before + 2]);
      expect(numbersOf(await log().readAfter(before + 3, 100, bytes(3)))).toEqual([before + 4]);
      expect(numbersOf(await log().readAfter(before + 3, 100, bytes(3) + 1))).toEqual([
        before + 4,
        before + 5,
      ]);
      // A deletion carries no text: it never reaches the bound by itself.
      const post = posts[4];
      if (post === undefined) throw new Error("no post");
      await fixture().posts.delete({ id: post.id, authorId: author.id });
      await eventsAfter(before, texts.length + 1);
      expect(numbersOf(await log().readAfter(before + 4, 100, 1))).toEqual([before + 5]);
      expect(numbersOf(await log().readAfter(before + 4, 100, bytes(4) + 1))).toEqual([
        before + 5,
        before + 6,
      ]);
      expect(await log().readAfter(before + 6, 100, 1)).toEqual([]);
    });

    test("a subscriber hears of new numbers, and no more once it has unsubscribed", async () => {
      const author = await newAuthor();
      const heard: number[] = [];
      const stop = log().subscribe((last) => heard.push(last));
      try {
        const before = await mark();
        await newPost(author);
        const deadline = Date.now() + NUMBERING_PATIENCE_MS;
        while (!heard.some((last) => last >= before + 1) && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        expect(heard.some((last) => last >= before + 1)).toBe(true);
      } finally {
        stop();
      }
      const count = heard.length;
      const before = await mark();
      await newPost(author);
      await eventsAfter(before, 1);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(heard.length).toBe(count);
    });

    // Last: it forgets the store's events.
    test("deleteNumberedBefore forgets from the front, never the newest, and numbering goes on", async () => {
      const author = await newAuthor();
      const before = await mark();
      await newPost(author);
      await newPost(author);
      await eventsAfter(before, 2);
      expect(await log().deleteNumberedBefore(new Date("1990-01-01T00:00:00.000Z"))).toBe(0);
      const kept = (await log().readAfter(0, 1_000_000)).length;
      expect(await log().deleteNumberedBefore(new Date(Date.now() + 3_600_000))).toBe(kept - 1);
      expect(numbersOf(await log().readAfter(0, 10))).toEqual([before + 2]);
      expect(await log().lastNumber()).toBe(before + 2);
      await newPost(author);
      expect(numbersOf(await eventsAfter(0, 2))).toEqual([before + 2, before + 3]);
      expect(await log().deleteNumberedBefore(new Date(Date.now() + 3_600_000))).toBe(1);
    });
  });
}
