import { postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { accepts, type ListeningService, type LogLine, startService } from "../support/service-process.js";
import { insertUserWithToken, lockPost, storedPost } from "./admin-sql.js";
import { createPost, jsonRequest, type SignedUpUser } from "./api-client.js";
import { RELIABILITY_JWT_SECRET } from "./in-process-service.js";
import { useSuiteDatabase } from "./postgres-suite.js";

const GRACE_PERIOD_MS = 8000;
const SHORT_GRACE_PERIOD_MS = 1000;
const IN_FLIGHT = 50;

/** Fastify's log line for a request it has read and routed: the request was accepted. */
const isIncomingPatch = (line: LogLine) =>
  line.msg === "incoming request" && (line.req as { method?: string } | undefined)?.method === "PATCH";

const isShuttingDown = (line: LogLine) => line.msg?.startsWith("shutting down") === true;

describeNeeding(
  await postgresForTests(),
  "graceful shutdown of the service process under load (SIGTERM)",
  () => {
    const database = useSuiteDatabase();
    const started: Promise<ListeningService>[] = [];
    let writer: SignedUpUser;

    const start = (env: Record<string, string> = {}): Promise<ListeningService> => {
      const service = startService({
        JWT_SECRET: RELIABILITY_JWT_SECRET,
        DATABASE_URL: database().connectionString,
        GRACE_PERIOD_MS: String(GRACE_PERIOD_MS),
        // Requests queued for a pooled connection behind the row lock must not give up (503)
        // while the test holds it: this suite is about shutdown, not about the pool's bound.
        DB_CONNECT_TIMEOUT_MS: "20000",
        ...env,
      });
      started.push(service);
      return service;
    };

    // Loading the sources is most of a child's start-up, so the services of the tests start
    // together, before the first test; each test ends its own.
    let services: {
      readonly graceful: Promise<ListeningService>;
      readonly secondSignal: Promise<ListeningService>;
      readonly shortGrace: Promise<ListeningService>;
    };

    beforeAll(async () => {
      writer = await insertUserWithToken(database());
      services = {
        graceful: start(),
        secondSignal: start(),
        shortGrace: start({ GRACE_PERIOD_MS: String(SHORT_GRACE_PERIOD_MS) }),
      };
      // A failed start fails the test that awaits it, not the run before it.
      for (const service of Object.values(services)) service.catch(() => {});
    });

    afterAll(async () => {
      await Promise.all(
        started.map((service) =>
          service.then(
            (running) => running.kill(),
            () => {},
          ),
        ),
      );
    });

    /**
     * Fires `count` PATCHes of post `id`, each with its own title, and waits until all were
     * accepted. `keepAlive: false` sends `Connection: close`, as a client that does not pool
     * connections does; otherwise fetch keeps each connection open for the next request, as
     * browsers and load balancers do.
     */
    const patchesInFlight = async (
      running: ListeningService,
      id: number,
      count: number,
      keepAlive = true,
    ) => {
      const titles = Array.from({ length: count }, (_, index) => `title ${index}`);
      const request = (title: string): RequestInit => {
        const init = jsonRequest("PATCH", { title }, writer.token);
        if (keepAlive) return init;
        return { ...init, headers: { ...(init.headers as Record<string, string>), connection: "close" } };
      };
      const responses = titles.map((title) =>
        fetch(`${running.url}/api/v1/posts/${id}`, request(title)).then(
          async (response) => ({ title, status: response.status, body: await response.text() }),
          (error: unknown) => ({ title, status: 0, body: String(error) }),
        ),
      );
      await vi.waitFor(
        () => {
          if (running.logs.filter(isIncomingPatch).length < count)
            throw new Error(`not every PATCH reached the service\n${running.output()}`);
        },
        { timeout: 15_000, interval: 20 },
      );
      return { titles, responses: Promise.all(responses) };
    };

    /**
     * SIGTERM while `IN_FLIGHT` PATCHes wait for a row lock the test holds: the listener must
     * close at once, every accepted PATCH must then be answered 200 with its own change, and the
     * process must exit 0 before the grace period ends.
     */
    const shutDownUnderLoad = async (running: ListeningService, keepAlive: boolean) => {
      const postId = await createPost(running.url, writer.token, "before shutdown");
      // Every PATCH waits for this lock, so all of them are still in flight when SIGTERM arrives.
      const release = await lockPost(database(), postId);
      let inFlight: Awaited<ReturnType<typeof patchesInFlight>>;
      let signalledAt: number;
      try {
        inFlight = await patchesInFlight(running, postId, IN_FLIGHT, keepAlive);
        signalledAt = performance.now();
        running.child.kill("SIGTERM");
        // 30 s, not the default 45: a miss then fails within the test's 60 s, with the output.
        await running.waitForLog(isShuttingDown, { timeoutMs: 30_000 });
        // The listener closes first, while the accepted requests are still waiting.
        await vi.waitFor(
          async () => {
            if (await accepts(running.port))
              throw new Error("the service still accepts connections after SIGTERM");
          },
          { timeout: 2000, interval: 20 },
        );
        expect(running.child.exitCode).toBeNull();
      } finally {
        await release();
      }

      const responses = await inFlight.responses;
      for (const response of responses) {
        expect(response.status, response.body).toBe(200);
        expect(JSON.parse(response.body)).toMatchObject({ id: postId, title: response.title });
      }
      const exit = await running.exited;
      expect(exit.code, running.output()).toBe(0);
      expect(exit.at - signalledAt).toBeLessThan(GRACE_PERIOD_MS);
      expect(running.logs.some((line) => line.msg === "stopped")).toBe(true);
      // The last PATCH to commit is the one stored: every one of them ran.
      expect(inFlight.titles).toContain((await storedPost(database(), postId))?.title);
    };

    it("finishes every accepted request with 2xx, refuses new connections, and exits 0 within the grace period", async () => {
      await shutDownUnderLoad(await services.graceful, false);
    });

    describe("with clients that keep their connections open", () => {
      it("still finishes every accepted request and exits 0 within the grace period", async () => {
        await shutDownUnderLoad(await start(), true);
      });
    });

    it("exits 1 at once on a second signal, without waiting for the requests in flight", async () => {
      const running = await services.secondSignal;
      const postId = await createPost(running.url, writer.token, "second signal");
      const release = await lockPost(database(), postId);
      try {
        const inFlight = await patchesInFlight(running, postId, 5);
        running.child.kill("SIGTERM");
        await running.waitForLog(isShuttingDown, { timeoutMs: 30_000 });
        const secondAt = performance.now();
        running.child.kill("SIGTERM");
        const exit = await running.exited;
        // close-with-grace: a second signal means "now", and exits 1 (documented in serve.ts).
        expect(exit.code).toBe(1);
        expect(exit.at - secondAt).toBeLessThan(2000);
        // The requests it gave up on are cut, not answered.
        for (const response of await inFlight.responses) expect(response.status).not.toBe(200);
      } finally {
        await release();
      }
    });

    it("exits 1 when the requests in flight outlast GRACE_PERIOD_MS", async () => {
      const running = await services.shortGrace;
      const postId = await createPost(running.url, writer.token, "grace period");
      const release = await lockPost(database(), postId);
      try {
        await patchesInFlight(running, postId, 3);
        const signalledAt = performance.now();
        running.child.kill("SIGTERM");
        const exit = await running.exited;
        expect(exit.code).toBe(1);
        expect(
          running.logs.some((line) => line.msg === `killed by timeout (${SHORT_GRACE_PERIOD_MS}ms)`),
        ).toBe(true);
        expect(exit.at - signalledAt).toBeGreaterThanOrEqual(SHORT_GRACE_PERIOD_MS * 0.9);
        expect(exit.at - signalledAt).toBeLessThan(SHORT_GRACE_PERIOD_MS + 2000);
      } finally {
        await release();
      }
    });
  },
);
