// A child process of the storm: it sends waves of concurrent GETs (the JSON pages and searches),
// each wave once every request of the last has been answered, until told to stop (or after one
// wave), and reports each answer's status, Retry-After, bytes and time. Outside the process that
// measures.
import { request } from "node:http";

function get(url, accept) {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = request(url, { agent: false, headers: { accept } }, (response) => {
      let bytes = 0;
      response.on("data", (chunk) => {
        bytes += chunk.length;
      });
      response.on("end", () =>
        resolve({
          path: url.pathname + url.search,
          status: response.statusCode ?? 0,
          retryAfter: response.headers["retry-after"],
          bytes,
          ms: performance.now() - started,
        }),
      );
      response.on("error", () =>
        resolve({ path: url.pathname + url.search, status: 0, bytes, ms: performance.now() - started }),
      );
    });
    req.on("error", () =>
      resolve({ path: url.pathname + url.search, status: 0, bytes: 0, ms: performance.now() - started }),
    );
    req.end();
  });
}

let stopped = false;
process.on("message", (message) => {
  if (message.stop === true) stopped = true;
});
// Whoever started this process is gone (a storm abandoned at a timeout): so is this process.
process.once("disconnect", () => process.exit(1));
process.once("message", async ({ baseUrl, paths, once }) => {
  const answers = [];
  let waves = 0;
  while (paths.length > 0 && !stopped) {
    answers.push(
      ...(await Promise.all(paths.map((path) => get(new URL(path, baseUrl), "application/json")))),
    );
    waves++;
    if (once) break;
  }
  process.send({ answers, waves }, () => process.exit(0));
});
