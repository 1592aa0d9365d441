import { describe, expect, it } from "vitest";
import { checkConsumer, checkHistory, type FeedEvent, type Operation, type StoredPost } from "./history.js";

/**
 * The nemesis checker on histories made by hand: it must find each kind of loss, duplicate,
 * stale read, error answer, slow recovery and feed fault, and nothing in a clean history.
 */

let clock = 0;
function op(
  kind: Operation["kind"],
  key: string,
  status: number,
  fields: Partial<Operation> = {},
): Operation {
  clock += 10;
  return { worker: 0, kind, key, invokedAt: clock, completedAt: clock + 5, status, id: "1", ...fields };
}

const created = (id: number, title: string): FeedEvent => ({
  id: "",
  type: "post.created",
  subject: String(id),
  data: { id, title },
});
const updated = (id: number, title: string): FeedEvent => ({
  id: "",
  type: "post.updated",
  subject: String(id),
  data: { id, title },
});
const deleted = (id: number): FeedEvent => ({
  id: "",
  type: "post.deleted",
  subject: String(id),
  data: { id },
});
const numbered = (events: FeedEvent[]): FeedEvent[] =>
  events.map((event, index) => ({ ...event, id: String(index + 1) }));

/** A clean history of one post: created, patched (once acknowledged, once in doubt), read; the fault at 0. */
function clean(): { history: Operation[]; stored: StoredPost[]; feed: FeedEvent[] } {
  clock = 0;
  const history = [
    op("create", "k", 201, { title: "k v0" }),
    op("patch", "k", 200, { title: "k v1" }),
    op("patch", "k", 503, { title: "k v2", retryAfter: "5" }),
    op("read", "k", 200, { title: "k v1", allowed: ["k v1", "k v2"] }),
  ];
  return {
    history,
    stored: [{ id: "1", key: "k", title: "k v1" }],
    feed: numbered([created(1, "k v0"), updated(1, "k v1")]),
  };
}

const check = (input: { history: Operation[]; stored: StoredPost[]; feed: FeedEvent[] }) =>
  checkHistory({ ...input, faultAt: 0, writesBackWithinMs: 30_000 }).violations;

describe("the nemesis checker", () => {
  it("finds nothing wrong in a clean history, and measures when writes came back", () => {
    const input = clean();
    expect(check(input)).toEqual([]);
    expect(checkHistory({ ...input, faultAt: 0, writesBackWithinMs: 30_000 }).writesBackMs).toBe(15);
  });

  it("accepts the content of a write in doubt in the final database and in the feed", () => {
    const input = clean();
    input.stored = [{ id: "1", key: "k", title: "k v2" }];
    input.feed = numbered([created(1, "k v0"), updated(1, "k v1"), updated(1, "k v2")]);
    expect(check(input)).toEqual([]);
  });

  it("finds an acknowledged create lost, an acknowledged patch undone and two posts of one key", () => {
    expect(check({ ...clean(), stored: [] })).toEqual([expect.stringContaining("post k ends as null")]);
    expect(check({ ...clean(), stored: [{ id: "1", key: "k", title: "k v0" }] })).toEqual([
      expect.stringContaining('post k ends as "k v0"'),
    ]);
    const twice = check({
      ...clean(),
      stored: [
        { id: "1", key: "k", title: "k v1" },
        { id: "2", key: "k", title: "k v0" },
      ],
    });
    expect(twice).toContain("2 posts for idempotency key k");
  });

  it("finds a read older than acknowledged", () => {
    const input = clean();
    input.history[3] = { ...(input.history[3] as Operation), title: "k v0" };
    expect(check(input)).toEqual([expect.stringContaining('read of k showed "k v0"')]);
  });

  it("finds a 500, a 503 without Retry-After and a request never answered", () => {
    const input = clean();
    input.history.push(
      op("patch", "k", 500, { title: "k v3", error: "boom" }),
      op("patch", "k", 503, { title: "k v4", retryAfter: null }),
      op("delete", "k", 0, { error: "TimeoutError" }),
    );
    input.stored = [{ id: "1", key: "k", title: "k v3" }];
    input.feed = numbered([created(1, "k v0"), updated(1, "k v1")]);
    expect(check(input)).toEqual([
      "patch of k answered 500: boom",
      "patch of k answered 503 without Retry-After",
      "delete of k got no answer: TimeoutError",
    ]);
  });

  it("finds writes that came back too late, or never", () => {
    const input = clean();
    expect(checkHistory({ ...input, faultAt: -40_000, writesBackWithinMs: 30_000 }).violations).toEqual([
      expect.stringContaining("writes came back 40015 ms after the fault"),
    ]);
    expect(checkHistory({ ...input, faultAt: 1_000, writesBackWithinMs: 30_000 }).violations).toEqual([
      "no write was acknowledged after the fault",
    ]);
  });

  it("finds a gap or a repeat in the feed, a change without its event and an event without its change", () => {
    const input = clean();
    const [first, second] = input.feed as [FeedEvent, FeedEvent];
    expect(check({ ...input, feed: [first, { ...second, id: "3" }] })).toEqual([
      "the feed's event #2 has id 3 (a gap or a repeat)",
    ]);
    expect(check({ ...input, feed: numbered([created(1, "k v0")]) })).toEqual([
      'post k: 0 post.updated events for the acknowledged "k v1"',
    ]);
    expect(
      check({ ...input, feed: numbered([created(1, "k v0"), created(1, "k v0"), updated(1, "k v1")]) }),
    ).toEqual(["post k: 2 post.created events for an acknowledged create", "post k: 2 post.created events"]);
    input.history.push(op("patch", "k", 400, { title: "k v9" }));
    expect(
      check({ ...input, feed: numbered([created(1, "k v0"), updated(1, "k v1"), updated(1, "k v9")]) }),
    ).toEqual(['post k: a post.updated event for "k v9", never acknowledged nor in doubt']);
  });

  it("finds an acknowledged delete undone, or without its event", () => {
    const input = clean();
    input.history.push(op("delete", "k", 204));
    expect(check({ ...input, feed: [...input.feed, { ...deleted(1), id: "3" }] })).toEqual([
      'post k ends as "k v1", allowed [null]',
    ]);
    expect(check({ ...input, stored: [] })).toEqual([
      "post k: 0 post.deleted events for an acknowledged delete",
    ]);
  });
});

describe("the stream consumer's check", () => {
  const feed = numbered([created(1, "a"), updated(1, "b"), created(2, "c"), deleted(1)]);

  it("finds nothing wrong with every event of the feed applied once, in order", () => {
    expect(checkConsumer(feed, ["1", "2", "3", "4"])).toEqual([]);
  });

  it("finds an event applied twice, one missing, one the feed lacks, and events out of order", () => {
    expect(checkConsumer(feed, ["1", "2", "2", "3", "4"])).toEqual(["event 2 applied 2 times"]);
    expect(checkConsumer(feed, ["1", "2", "4"])).toEqual(["1 events of the feed never applied (first 3)"]);
    expect(checkConsumer(feed, ["1", "2", "3", "4", "5"])).toEqual(["events applied that the feed lacks: 5"]);
    expect(checkConsumer(feed, ["1", "3", "2", "4"])).toEqual([
      "applied out of the feed's order: the event applied #3 comes before the one applied before it",
    ]);
  });
});
