import type { PostChangeEvent } from "@posts/domain";
import { describe, expect, it } from "vitest";
import { cloudEventRenderer } from "../../src/events/cloud-event.js";
import {
  encodeInSlices,
  feedMessage,
  feedMessageInSlices,
  SLICE_UNITS,
} from "../../src/events/feed-message.js";
import { CONTENT_PART_CHARACTERS } from "../../src/routes/post-serializer.js";

const render = cloudEventRenderer("Asia/Seoul");
const T0 = new Date("2026-11-22T10:15:30.123Z");

function created(number: number, title: string, content: string): PostChangeEvent {
  return {
    number,
    postId: 7,
    occurredAt: T0,
    type: "post.created",
    post: { id: 7, title, content, createdAt: T0, updatedAt: T0, author: { id: 3, email: "a@example.com" } },
  };
}

describe("a change event encoded a slice at a time", () => {
  // Escapes, characters of two and three bytes, a pair of surrogates across the first slice's
  // end, a lone surrogate (escaped), and a title that spells the content field.
  const tricky =
    "a".repeat(SLICE_UNITS - 1) +
    "😀" +
    'quote " backslash \\ tab \t newline \n nul-free \u0001 é 본문 \ud800 lone '.repeat(40_000);
  const cases: [string, PostChangeEvent][] = [
    ["a content of several slices", created(41, 'title "content":"" here', tricky)],
    ["a content of exactly one slice", created(42, "t", "b".repeat(SLICE_UNITS))],
    ["a small content", created(43, "t", "small")],
    ["a deletion", { number: 44, postId: 7, occurredAt: T0, type: "post.deleted" }],
  ];

  for (const [name, event] of cases) {
    it(`writes the same bytes as in one go: ${name}`, async () => {
      const message = await feedMessageInSlices(event, render);
      expect(message.number).toBe(event.number);
      const whole = Buffer.concat(feedMessage(event, render).chunks);
      expect(Buffer.concat(message.chunks).equals(whole)).toBe(true);
      expect(message.byteLength).toBe(whole.length);
      const json = await encodeInSlices(event, render, "[", "]");
      expect(Buffer.concat(json).equals(Buffer.from(`[${render(event)}]`))).toBe(true);
      expect(JSON.parse(Buffer.concat(json).toString("utf8"))[0].data.content).toBe(
        event.type === "post.deleted" ? undefined : event.post.content,
      );
      // A content of several slices stays in parts of 32 Ki characters: never one buffer of the whole.
      const units = event.type === "post.deleted" ? 0 : event.post.content.length;
      if (units <= SLICE_UNITS) expect(json).toHaveLength(1);
      else {
        expect(json.length).toBeGreaterThanOrEqual(Math.ceil(units / CONTENT_PART_CHARACTERS) + 2);
        for (const part of json) expect(part.length).toBeLessThanOrEqual(6 * CONTENT_PART_CHARACTERS);
      }
    });
  }

  it("lets other work run between the slices of a large content", async () => {
    let turns = 0;
    const counting = setInterval(() => turns++, 0);
    try {
      await encodeInSlices(created(45, "t", "c".repeat(8 * SLICE_UNITS)), render, "", "");
    } finally {
      clearInterval(counting);
    }
    expect(turns).toBeGreaterThan(0);
  });
});
