import { SUBJECTS } from "@posts/adapters-nats";
import { readStream, type StreamMessage } from "@posts/adapters-nats/testing";
import { expect } from "vitest";

/** Polls `check` every 50 ms until it holds; fails with `what` after `timeoutMs`. */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000) {
  await expect
    .poll(check, {
      interval: 50,
      timeout: timeoutMs,
      message: `timed out after ${timeoutMs} ms waiting until ${what}`,
    })
    .toBe(true);
}

/** Waits until the stream holds `count` messages, then answers all of them. */
export async function streamWith(url: string, count: number, timeoutMs = 20_000): Promise<StreamMessage[]> {
  let messages: StreamMessage[] = [];
  await eventually(
    `the stream holds ${count} messages (it holds ${messages.length})`,
    async () => {
      messages = await readStream(url);
      return messages.length >= count;
    },
    timeoutMs,
  );
  return messages;
}

/**
 * The stream holds exactly events `first`..`last`, each once, in order, at consecutive
 * sequences from `firstSequence`, on its type's subject, with the body the log gave.
 */
export function expectExactly(
  messages: readonly StreamMessage[],
  first: number,
  last: number,
  firstSequence = 1,
) {
  const ids = messages.map((message) => Number(message.id));
  expect(ids).toEqual(Array.from({ length: last - first + 1 }, (_, i) => first + i));
  expect(messages.map((message) => message.sequence)).toEqual(ids.map((_, i) => firstSequence + i));
  for (const message of messages) {
    const body = JSON.parse(message.body) as { id: string; type: keyof typeof SUBJECTS };
    expect(body.id).toBe(message.id);
    expect(message.subject).toBe(SUBJECTS[body.type]);
  }
}
