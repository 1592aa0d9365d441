import { IdempotencyKeyMemory, type NewPost } from "@posts/domain";
import { describe, expect, it } from "vitest";

const NOW = new Date("2026-11-22T10:15:30.123Z");
const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs);
const HOUR = 3_600_000;

const post = (overrides: Partial<NewPost> = {}): NewPost => ({
  authorId: 3,
  title: "t",
  content: "c",
  createdAt: NOW,
  ...overrides,
});

/** A store that hands out ids from 100 and knows the authors it is given. */
function store(authors: readonly number[] = [3, 4]) {
  const stored: NewPost[] = [];
  const create = (each: NewPost) => {
    if (!authors.includes(each.authorId)) return undefined;
    stored.push(each);
    return { id: 99 + stored.length };
  };
  return { stored, create };
}

describe("IdempotencyKeyMemory", () => {
  it("stores under a new key, then replays it for the same text without storing again", () => {
    const keys = new IdempotencyKeyMemory();
    const { stored, create } = store();
    const key = { key: "k", expiresAt: at(HOUR) };
    expect(keys.createIdempotently(post(), key, create)).toStrictEqual({
      ok: true,
      value: { id: 100, replayed: false },
    });
    expect(keys.createIdempotently(post({ createdAt: at(HOUR - 1) }), key, create)).toStrictEqual({
      ok: true,
      value: { id: 100, replayed: true },
    });
    expect(stored).toHaveLength(1);
  });

  it("refuses another text under a standing key with key-reused, storing nothing", () => {
    const keys = new IdempotencyKeyMemory();
    const { stored, create } = store();
    const key = { key: "k", expiresAt: at(HOUR) };
    keys.createIdempotently(post(), key, create);
    expect(keys.createIdempotently(post({ title: "T" }), key, create)).toStrictEqual({
      ok: false,
      error: "key-reused",
    });
    expect(stored).toHaveLength(1);
  });

  it("keeps keys per author and tells keys apart exactly", () => {
    const keys = new IdempotencyKeyMemory();
    const { create } = store();
    const key = { key: "k", expiresAt: at(HOUR) };
    keys.createIdempotently(post(), key, create);
    const ids = [
      keys.createIdempotently(post({ authorId: 4 }), key, create),
      keys.createIdempotently(post(), { ...key, key: "K" }, create),
    ].map((result) => result.ok && result.value);
    expect(ids).toEqual([
      { id: 101, replayed: false },
      { id: 102, replayed: false },
    ]);
  });

  it("answers author-gone, remembering nothing, when the store has no such author", () => {
    const keys = new IdempotencyKeyMemory();
    const { stored, create } = store([4]);
    const key = { key: "k", expiresAt: at(HOUR) };
    expect(keys.createIdempotently(post(), key, create)).toStrictEqual({ ok: false, error: "author-gone" });
    expect(keys.forgetExpired(at(HOUR))).toBe(0);
    expect(stored).toEqual([]);
  });

  it("treats a key as new from its expiresAt on, and remembers the new use in its place", () => {
    const keys = new IdempotencyKeyMemory();
    const { create } = store();
    keys.createIdempotently(post(), { key: "k", expiresAt: at(HOUR) }, create);
    const later = post({ title: "other", createdAt: at(HOUR) });
    expect(keys.createIdempotently(later, { key: "k", expiresAt: at(2 * HOUR) }, create)).toStrictEqual({
      ok: true,
      value: { id: 101, replayed: false },
    });
    expect(
      keys.createIdempotently(post({ createdAt: at(HOUR + 1) }), { key: "k", expiresAt: at(0) }, create),
    ).toStrictEqual({ ok: false, error: "key-reused" });
  });

  it("keeps its own copy of expiresAt", () => {
    const keys = new IdempotencyKeyMemory();
    const { create } = store();
    const expiresAt = at(HOUR);
    keys.createIdempotently(post(), { key: "k", expiresAt }, create);
    expiresAt.setTime(0);
    expect(
      keys.createIdempotently(post({ createdAt: at(1) }), { key: "k", expiresAt }, create),
    ).toStrictEqual({
      ok: true,
      value: { id: 100, replayed: true },
    });
  });

  it("forgetExpired forgets exactly the keys expired at the instant, across authors, and counts them", () => {
    const keys = new IdempotencyKeyMemory();
    const { create } = store();
    keys.createIdempotently(post(), { key: "a", expiresAt: at(HOUR) }, create);
    keys.createIdempotently(post({ authorId: 4 }), { key: "a", expiresAt: at(HOUR) }, create);
    keys.createIdempotently(post(), { key: "b", expiresAt: at(2 * HOUR) }, create);
    expect(keys.forgetExpired(at(HOUR - 1))).toBe(0);
    expect(keys.forgetExpired(at(HOUR))).toBe(2);
    expect(keys.forgetExpired(at(HOUR))).toBe(0);
    expect(
      keys.createIdempotently(post({ createdAt: at(HOUR) }), { key: "b", expiresAt: at(0) }, create),
    ).toStrictEqual({
      ok: true,
      value: { id: 102, replayed: true },
    });
    expect(keys.forgetExpired(at(2 * HOUR))).toBe(1);
  });

  it("forgetAuthor forgets that author's keys and nobody else's", () => {
    const keys = new IdempotencyKeyMemory();
    const { create } = store();
    keys.createIdempotently(post(), { key: "k", expiresAt: at(HOUR) }, create);
    keys.createIdempotently(post({ authorId: 4 }), { key: "k", expiresAt: at(HOUR) }, create);
    keys.forgetAuthor(3);
    expect(keys.forgetExpired(at(HOUR))).toBe(1);
    // Forgotten: the same key and text store a new post.
    expect(keys.createIdempotently(post(), { key: "k", expiresAt: at(HOUR) }, create)).toStrictEqual({
      ok: true,
      value: { id: 102, replayed: false },
    });
  });
});
