// A child process of the storm: it GETs /health one after the other, a new one every `everyMs`
// (or at once when the last took longer), until told to stop, then reports every probe's time.
// It runs outside the process that measures, so that the probes time the service alone.
import { Agent, request } from "node:http";

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function probe(url, timeoutMs) {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = request(url, { agent, timeout: timeoutMs }, (response) => {
      response.resume();
      response.on("end", () =>
        resolve({ ms: performance.now() - started, status: response.statusCode ?? 0 }),
      );
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve({ ms: performance.now() - started, status: 0 }));
    req.end();
  });
}

let stopped = false;
process.on("message", (message) => {
  if (message.stop === true) stopped = true;
});
// Whoever started this process is gone (a storm abandoned at a timeout): so is this process.
process.once("disconnect", () => process.exit(1));
process.once("message", async ({ baseUrl, everyMs, timeoutMs }) => {
  const url = new URL("/health", baseUrl);
  const ms = [];
  const failed = [];
  while (!stopped) {
    const started = performance.now();
    const outcome = await probe(url, timeoutMs);
    ms.push(outcome.ms);
    if (outcome.status !== 200) failed.push(outcome.status);
    const left = everyMs - (performance.now() - started);
    if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
  }
  process.send({ ms, failed }, () => process.exit(0));
});
