import { request } from "node:http";
import { expect } from "vitest";
import type { ListeningService } from "./service-process.js";

/**
 * Starts creating a post, sends SIGTERM while its body is still arriving, checks that the
 * service refuses new connections from then on, then lets the body finish: the request must
 * still be answered 201 and the process must exit 0. Answers the created post's id.
 */
export async function shutDownDuringARequest(service: ListeningService, token: string): Promise<number> {
  const body = JSON.stringify({ title: "in flight", content: "x".repeat(64 * 1024) });
  const half = Math.floor(body.length / 2);
  const from = service.logs.length;

  const outgoing = request(`${service.url}/api/v1/posts`, {
    method: "POST",
    agent: false,
    headers: {
      "content-type": "application/json",
      "content-length": String(body.length),
      "x-auth-token": token,
    },
  });
  const answered = new Promise<{ status: number | undefined; location: string | undefined }>(
    (resolve, reject) => {
      outgoing.on("error", reject);
      outgoing.on("response", (response) => {
        response.resume();
        response.on("end", () =>
          resolve({ status: response.statusCode, location: response.headers.location }),
        );
      });
    },
  );
  outgoing.write(body.slice(0, half));

  // The service has the request (Fastify logs it on arrival, before reading the body).
  await service.waitForLog((line) => line.msg === "incoming request", { from });
  service.child.kill("SIGTERM");
  await service.waitForLog((line) => line.msg?.startsWith("shutting down") === true, { from });
  await expectRefusesNewConnections(service.url);

  outgoing.end(body.slice(half));
  const { status, location } = await answered;
  expect(status).toBe(201);
  expect(location).toMatch(/\/api\/v1\/posts\/\d+$/);

  const exit = await service.exited;
  expect(exit, service.output()).toMatchObject({ code: 0, signal: null });
  expect(service.logs.slice(from).map((line) => line.msg)).toContain("stopped");
  return Number(location?.split("/").pop());
}

async function expectRefusesNewConnections(url: string) {
  await expect
    .poll(
      () =>
        new Promise<boolean>((resolve) => {
          const probe = request(`${url}/health`, { agent: false }, (response) => {
            response.resume();
            resolve(false);
          });
          probe.on("error", () => resolve(true));
          probe.end();
        }),
      { message: "the service still accepts connections after SIGTERM", timeout: 5000, interval: 50 },
    )
    .toBe(true);
}
