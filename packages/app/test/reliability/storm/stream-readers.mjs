// A child process of the storm: it opens change-feed streams at once, each from its own client
// address if given, reads each to the end of the feed, and reports what every stream received.
// It runs outside the process that measures, so that reading gigabytes delays no probe there.
// Plain JavaScript, run by node without a loader, so that it costs the storm no transform.
import { request } from "node:http";

const ID = Buffer.from("\nid: ");
// An id line ("\nid: " and up to 16 digits and its "\n") fits in these bytes: the tail of a chunk
// kept to find an id line split across two chunks.
const CARRY = 24;

/**
 * Counts the `id:` lines of a stream as its chunks come, without copying them: it searches each
 * chunk for "\nid: " and joins only the few bytes around a chunk's boundary.
 */
function idCounter(onId) {
  let carry = Buffer.alloc(0);
  // Every id line that ends in `buffer` at or after `from` and starts before `before`.
  const scan = (buffer, before, from) => {
    let at = buffer.indexOf(ID);
    while (at >= 0 && at < before) {
      const end = buffer.indexOf(10, at + ID.length);
      if (end < 0) return;
      if (end >= from) onId(Number(buffer.toString("latin1", at + ID.length, end)));
      at = buffer.indexOf(ID, at + 1);
    }
  };
  return (chunk) => {
    if (carry.length > 0) {
      const joint = Buffer.concat([carry, chunk.subarray(0, CARRY)]);
      scan(joint, carry.length, carry.length);
    }
    scan(chunk, chunk.length, 0);
    carry =
      chunk.length >= CARRY
        ? Buffer.from(chunk.subarray(chunk.length - CARRY))
        : Buffer.concat([carry, chunk]).subarray(-CARRY);
  };
}

function readStream({ baseUrl, after, lastId, localAddress, timeoutMs }) {
  return new Promise((resolve) => {
    const started = performance.now();
    const outcome = {
      localAddress,
      status: 0,
      bytes: 0,
      events: 0,
      lastId: after,
      problem: undefined,
      ms: 0,
    };
    let done = false;
    const finish = (problem) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (problem !== undefined && outcome.problem === undefined) outcome.problem = problem;
      outcome.ms = Math.round(performance.now() - started);
      req.destroy();
      resolve(outcome);
    };
    const count = idCounter((id) => {
      outcome.events++;
      if (id !== outcome.lastId + 1 && outcome.problem === undefined) {
        outcome.problem = `id ${id} after ${outcome.lastId}`;
      }
      outcome.lastId = id;
      if (id >= lastId) finish(undefined);
    });
    const url = new URL(`/api/v1/posts/events?after=${after}`, baseUrl);
    const req = request(url, {
      headers: { accept: "text/event-stream" },
      agent: false,
      ...(localAddress === undefined ? {} : { localAddress }),
    });
    const timer = setTimeout(() => finish(`not complete after ${timeoutMs} ms`), timeoutMs);
    req.on("response", (response) => {
      outcome.status = response.statusCode ?? 0;
      if (outcome.status !== 200) {
        response.resume();
        response.on("end", () => finish(undefined));
        return;
      }
      response.on("data", (chunk) => {
        outcome.bytes += chunk.length;
        count(chunk);
      });
      response.on("end", () => finish("the service ended the stream"));
      response.on("error", (error) => finish(`stream error: ${error.message}`));
    });
    req.on("error", (error) => finish(`request error: ${error.message}`));
    req.end();
  });
}

// Whoever started this process is gone (a storm abandoned at a timeout): so is this process.
process.once("disconnect", () => process.exit(1));
process.once("message", async (task) => {
  const outcomes = await Promise.all(
    task.localAddresses.map((localAddress) =>
      readStream({ ...task, localAddress: localAddress ?? undefined }),
    ),
  );
  process.send({ outcomes }, () => process.exit(0));
});
