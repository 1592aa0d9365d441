import { createHash } from "node:crypto";
import { request } from "node:http";
import { expect } from "vitest";
import { MIB, processMemory } from "../support/process-memory.js";
import type { ListeningService } from "../support/service-process.js";

// What the tests of large posts share: answers hashed as they come (never held), the process's
// memory watched against the bound of docs/posts.md#large-posts, and the checks every answer of
// such a storm of requests must pass.

/** What docs/posts.md#large-posts states: the process stays under 512 MiB of RSS. */
export const RSS_BOUND_MIB = 512;
/** Above this the service is stopped at once: a failure must not take the machine's memory with it. */
const KILL_ABOVE_MIB = 2048;

/** One answer, its body hashed as it came; the text of its first 4 KiB kept; status 0 when cut short. */
export interface Answer {
  readonly status: number;
  readonly bytes: number;
  readonly digest: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

/**
 * Sends `parts` as one body with its Content-Length (each part written as it is, never joined:
 * fifty bodies of 10 MB share one buffer; none for a GET) and hashes the answer as it comes,
 * keeping the text of a short one. A connection cut short answers status 0.
 */
export function exchange(
  url: string,
  method: string,
  headers: Record<string, string> = {},
  parts: readonly Buffer[] = [],
): Promise<Answer> {
  return new Promise((resolve) => {
    const cut = (error: unknown) =>
      resolve({ status: 0, bytes: 0, digest: "", headers: {}, text: String(error) });
    const length = parts.reduce((sum, part) => sum + part.length, 0);
    const body = length === 0 ? {} : { "content-type": "application/json", "content-length": String(length) };
    const sent = request(url, { method, headers: { ...headers, ...body } }, (response) => {
      const hash = createHash("sha256");
      let bytes = 0;
      let text = "";
      response.on("data", (part: Buffer) => {
        hash.update(part);
        bytes += part.length;
        if (bytes <= 4096) text += part.toString("utf8");
      });
      response.on("error", cut);
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          bytes,
          digest: hash.digest("hex"),
          headers: response.headers,
          text,
        }),
      );
    });
    // The server answers a body it refuses (503) before reading it: writing the rest may fail then.
    sent.on("error", cut);
    for (const part of parts) sent.write(part);
    sent.end();
  });
}

/**
 * Watches `service`'s resident set every 50 ms, killing it above 2 GiB, until the returned
 * function is called; that answers the peak in MiB: the kernel's (VmHWM) while the process
 * lives, else the last RSS seen before it was killed.
 */
export function watchMemory(service: ListeningService): () => number {
  const pid = service.child.pid as number;
  let lastRss = 0;
  const watchdog = setInterval(() => {
    lastRss = processMemory(pid).rss / MIB;
    if (lastRss > KILL_ABOVE_MIB) service.child.kill("SIGKILL");
  }, 50);
  return () => {
    clearInterval(watchdog);
    return service.child.exitCode === null && service.child.signalCode === null
      ? processMemory(pid).peak / MIB
      : lastRss;
  };
}

/** How many times each key comes in `keys`, for a line of figures ("PATCH 200": 49, …). */
export function tally(keys: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const key of keys) counts[key] = (counts[key] ?? 0) + 1;
  return counts;
}

/**
 * Expects none of `answers` cut short (naming the service's warnings and errors if one was), and
 * `service` alive, neither exited nor killed above its bound.
 */
export function expectAllAnswered(service: ListeningService, answers: readonly Answer[]): void {
  const cut = answers.find((answer) => answer.status === 0);
  const problems = service.logs.filter((line) => (line.level ?? 0) >= 40).map((line) => JSON.stringify(line));
  expect(cut, `an answer was cut short: ${cut?.text}\n${problems.join("\n").slice(0, 4000)}`).toBeUndefined();
  expect(service.child.exitCode, "the service exited").toBeNull();
  expect(service.child.signalCode, "the service was killed above its bound").toBeNull();
}

/** Expects `answer` to be the service's 503: told when to come back, in the error envelope. */
export function expectToComeBack(answer: Answer): void {
  expect(answer.status).toBe(503);
  expect(answer.headers["retry-after"]).toBeDefined();
  expect(JSON.parse(answer.text)).toMatchObject({ status: 503, error: "Service Unavailable" });
}
