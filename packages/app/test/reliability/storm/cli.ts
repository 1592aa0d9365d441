/**
 * The storm against a service already running, by hand:
 *
 *   pnpm exec tsx packages/app/test/reliability/storm/cli.ts http://127.0.0.1:8080 [--pid N]
 *     [--plant 50] [--post-bytes 10000000] [--streams 200] [--pages 50] [--searches 20]
 *     [--addresses 20] [--once]
 *
 * `--plant n` first creates n posts through the API (a new user); `--pid` names the service's
 * process, whose RSS is then read from /proc; `--addresses n` spreads the streams over
 * 127.0.0.2 … (n of them; 0: the default address); `--once` sends one wave of pages and searches
 * rather than waves until the streams end. It prints the figures and exits 1 when a stream
 * missed an event or a request failed with a 5xx (but a 503 refused for want of room, which says
 * when to ask again).
 */
import { parseArgs } from "node:util";
import { describeStorm, lastEventNumber, plantPosts, refusedForRoom, runStorm } from "./storm.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    pid: { type: "string" },
    plant: { type: "string", default: "0" },
    "post-bytes": { type: "string", default: "10000000" },
    streams: { type: "string", default: "200" },
    pages: { type: "string", default: "50" },
    searches: { type: "string", default: "20" },
    addresses: { type: "string", default: "20" },
    once: { type: "boolean", default: false },
  },
});
const baseUrl = positionals[0] ?? "http://127.0.0.1:8080";
const plant = Number(values.plant);
if (plant > 0) {
  const started = performance.now();
  await plantPosts(baseUrl, { count: plant, bytes: Number(values["post-bytes"]), concurrency: 2 });
  console.log(`planted ${plant} posts in ${Math.round(performance.now() - started)} ms`);
}
const lastId = await lastEventNumber(baseUrl);
const outcome = await runStorm(
  baseUrl,
  {
    streams: Number(values.streams),
    addresses: Array.from({ length: Number(values.addresses) }, (_, i) => `127.0.0.${i + 2}`),
    pages: Number(values.pages),
    searches: Number(values.searches),
    repeatRequests: !values.once,
    lastId,
    streamTimeoutMs: 600_000,
    probeEveryMs: 20,
  },
  values.pid === undefined ? undefined : Number(values.pid),
);
console.log(describeStorm(outcome));
const broken =
  outcome.streams.some((stream) => stream.status === 200 && stream.problem !== undefined) ||
  outcome.requests.some(
    (request) => (request.status >= 500 && !refusedForRoom(request)) || request.status === 0,
  );
process.exit(broken ? 1 : 0);
