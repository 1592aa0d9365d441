import { describe, expect, it } from "vitest";
import { acceptsEventStream } from "../../src/http/event-stream-negotiation.js";

describe("acceptsEventStream", () => {
  it.each([
    ["text/event-stream", true],
    ["Text/Event-Stream", true],
    ["text/event-stream;q=0.5", true],
    ["text/event-stream, application/json", true],
    ["application/json, text/event-stream", true],
    ["application/json;q=0.5, text/event-stream", true],
    ["text/event-stream;q=0.5, application/json;q=0.5", true],
    ["text/event-stream;q=0.1, text/*;q=0", true],
    ["text/event-stream;q=0", false],
    ["text/event-stream;q=0, application/json", false],
    ["text/event-stream; q=0.000, */*", false],
    ["text/event-stream;q=0.5, application/json", false],
    ["text/event-stream;q=0.5, */*", false],
    ["text/event-stream;q=0.5, application/*", false],
    ["text/event-stream;q=0.5, application/json;q=0.1, */*", true],
    ["*/*", false],
    ["text/*", false],
    ["application/json", false],
    ["", false],
    [undefined, false],
    ["text/event-streamer", false],
    ["text/event-stream;q=2", false],
  ])("%j: %s", (accept, expected) => {
    expect(acceptsEventStream(accept)).toBe(expected);
  });
});
