import { describe, expect, it } from "vitest";
import { evidenceIn } from "../../src/connection/write-evidence.js";

const row = (xid: string | null, post: number | null, at = "1800000000000001", floor = 7) => ({
  id: post,
  written_xid: xid,
  written_at: at,
  written_floor: floor,
  written_post: post,
});

describe("evidenceIn: what the rows of a write statement tell of its transaction", () => {
  it("gathers the posts a transaction wrote, with its id, its start and the lowest floor", () => {
    expect(evidenceIn([row("900", 1, undefined, 9), row("900", 2, undefined, 7), row(null, null)])).toEqual({
      xid: "900",
      startedAt: "1800000000000001",
      floor: "7",
      posts: ["1", "2"],
    });
  });

  it("has none for rows of another statement, no row, or a transaction that wrote no post", () => {
    expect(evidenceIn([{ id: 1 }])).toBeUndefined();
    expect(evidenceIn([])).toBeUndefined();
    expect(evidenceIn([row(null, null), row("900", null)])).toBeUndefined();
  });

  it("has none when a row reports a post written without a transaction id, or rows disagree on the transaction", () => {
    expect(evidenceIn([row(null, 1)])).toBeUndefined();
    expect(evidenceIn([row("900", 1), row("901", 2)])).toBeUndefined();
    expect(evidenceIn([row("900", 1), row("900", 2, "1800000000000002")])).toBeUndefined();
  });
});
