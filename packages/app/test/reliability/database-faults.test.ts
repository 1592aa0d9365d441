import { setTimeout as sleep } from "node:timers/promises";
import { postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  backendsWaitingForLocks,
  databaseNameOf,
  lockPost,
  storedPost,
  terminateBackends,
} from "./admin-sql.js";
import {
  createPost,
  jsonRequest,
  type SignedUpUser,
  signUp,
  type TimedResponse,
  timedFetch,
} from "./api-client.js";
import { type InProcessService, startInProcessService } from "./in-process-service.js";
import { serverOf, useSuiteDatabase } from "./postgres-suite.js";
import { TcpProxy } from "./tcp-proxy.js";

// Short timeouts keep the file fast; every bound below is stated in terms of them.
const CONNECT_TIMEOUT_MS = 1000;
const STATEMENT_TIMEOUT_MS = 500;
// createPostgresDatabase's default: the client gives up one second after the server would have.
const QUERY_TIMEOUT_MS = STATEMENT_TIMEOUT_MS + 1000;
const POOL_SIZE = 2;
// Room for a loaded two-core CI machine (1 s was overshot by 28 ms there); CONNECT_TIMEOUT_MS plus
// this is the issue's own bound, 3 s, and far below what "hangs" would mean.
const SLACK_MS = 2000;

describeNeeding(
  await postgresForTests(),
  "the service when its database fails (TCP proxy in front of PostgreSQL)",
  () => {
    const database = useSuiteDatabase();
    let proxy: TcpProxy;
    let service: InProcessService;
    let writer: SignedUpUser;
    let postId: number;

    const get = (path: string) => timedFetch(`${service.url}${path}`);
    const patch = (body: unknown) =>
      timedFetch(`${service.url}/api/v1/posts/${postId}`, jsonRequest("PATCH", body, writer.token));
    /** The requests a client makes most, read and write, each of which needs the database. */
    const everyKindOfRequest = () =>
      Promise.all([
        get("/api/v1/posts"),
        get(`/api/v1/posts/${postId}`),
        timedFetch(
          `${service.url}/api/v1/posts`,
          jsonRequest("POST", { title: "t", content: "c" }, writer.token),
        ),
        patch({ title: "while down" }),
        timedFetch(`${service.url}/api/v1/user`, { headers: { "x-auth-token": writer.token } }),
      ]);

    const expectUnavailable = (response: TimedResponse, withinMs: number) => {
      expect(response.status, response.body).toBe(503);
      expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(JSON.parse(response.body)).toMatchObject({ status: 503, error: "Service Unavailable" });
      expect(response.elapsedMs).toBeLessThan(withinMs);
    };

    /**
     * Requests until one is answered 200, for at most `ms`; answers every status seen. A loop, not
     * vi.waitFor: running out of time is not a failure here, the caller judges the statuses.
     */
    const untilServing = async (ms: number): Promise<number[]> => {
      const seen: number[] = [];
      const deadline = performance.now() + ms;
      for (;;) {
        const { status } = await get("/api/v1/posts?size=1");
        seen.push(status);
        if (status === 200 || performance.now() > deadline) return seen;
        await sleep(100);
      }
    };

    /** Empties the service's pool: cut connections are dropped by the pool as they fail. */
    const emptyThePool = async () => {
      proxy.cut();
      await sleep(100);
    };

    beforeAll(async () => {
      proxy = await TcpProxy.start(serverOf(database().connectionString));
      service = await startInProcessService({
        DATABASE_URL: proxy.proxied(database().connectionString),
        DB_POOL_SIZE: String(POOL_SIZE),
        DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
        DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      });
      writer = await signUp(service.url);
      postId = await createPost(service.url, writer.token, "original title", "original content");
    });

    afterEach(async () => {
      // Whatever a test broke, the next one starts from a healthy database.
      await proxy.restore();
      expect(await untilServing(5000)).toContain(200);
    });

    afterAll(async () => {
      await service?.close();
      await proxy?.close();
    });

    it("answers 503 with Retry-After well within the connect timeout when the database refuses connections", async () => {
      await proxy.refuse();
      for (const response of await everyKindOfRequest())
        expectUnavailable(response, CONNECT_TIMEOUT_MS + SLACK_MS);

      await proxy.restore();
      // The pool opens new connections by itself: nobody restarts the service.
      expect((await get(`/api/v1/posts/${postId}`)).status).toBe(200);
    });

    it("answers 503 once the connect timeout passes when a partition swallows new connections", async () => {
      await emptyThePool();
      proxy.blackhole();
      for (const response of await everyKindOfRequest()) {
        expectUnavailable(response, CONNECT_TIMEOUT_MS + SLACK_MS);
        // Not refused at once: the pool really waited for the handshake.
        expect(response.elapsedMs).toBeGreaterThanOrEqual(CONNECT_TIMEOUT_MS * 0.9);
      }
    });

    it("answers 503 once the query timeout passes when a partition stalls connections already open", async () => {
      // Warm the pool, then stall those very connections.
      await Promise.all(Array.from({ length: POOL_SIZE }, () => get("/api/v1/posts")));
      proxy.blackhole();
      const responses = await Promise.all(Array.from({ length: POOL_SIZE }, () => get("/api/v1/posts")));
      for (const response of responses) expectUnavailable(response, QUERY_TIMEOUT_MS + SLACK_MS);

      await proxy.restore();
      // The stalled connections get their late answers and serve again; nothing is left stuck.
      const after = await Promise.all(Array.from({ length: POOL_SIZE * 3 }, () => get("/api/v1/posts")));
      expect(after.map((response) => response.status)).toEqual(after.map(() => 200));
    });

    it("answers 503 when a write waits past the statement timeout behind a row lock, and changes nothing", async () => {
      const release = await lockPost(database(), postId);
      let blocked: TimedResponse;
      try {
        blocked = await patch({ title: "blocked by the lock" });
      } finally {
        await release();
      }
      expectUnavailable(blocked, STATEMENT_TIMEOUT_MS + SLACK_MS);
      expect(blocked.elapsedMs).toBeGreaterThanOrEqual(STATEMENT_TIMEOUT_MS * 0.9);
      expect((await storedPost(database(), postId))?.title).toBe("original title");

      const unblocked = await patch({ title: "after the lock" });
      expect(unblocked.status).toBe(200);
      expect(JSON.parse(unblocked.body)).toMatchObject({
        title: "after the lock",
        content: "original content",
      });
      await patch({ title: "original title" });
    });

    it("answers 503 within the acquire timeout when every pooled connection is busy, not an unbounded queue", async () => {
      // Occupy every connection of the service's own pool.
      let releaseAll = () => {};
      const released = new Promise<void>((resolve) => {
        releaseAll = resolve;
      });
      let acquired = 0;
      const holders = Array.from({ length: POOL_SIZE }, () =>
        service.database.db.connection().execute(async () => {
          acquired++;
          await released;
        }),
      );
      try {
        // The test's own timeout (60 s) is the deadline.
        await expect
          .poll(() => acquired, { timeout: 60_000, interval: 10 })
          .toBeGreaterThanOrEqual(POOL_SIZE);
        // Twenty callers queue for the pool; each gives up after the acquire timeout.
        const responses = await Promise.all(Array.from({ length: 20 }, () => get("/api/v1/posts")));
        for (const response of responses) expectUnavailable(response, CONNECT_TIMEOUT_MS + SLACK_MS);
      } finally {
        releaseAll();
        await Promise.all(holders);
      }
      expect((await get("/api/v1/posts")).status).toBe(200);
    });

    /** Until the service's PATCH is inside its statement, waiting for the test's row lock. */
    const untilWaitingForTheLock = () =>
      expect
        .poll(() => backendsWaitingForLocks(database(), databaseNameOf(database().connectionString)), {
          timeout: 5000,
          interval: 20,
          message: "the PATCH never reached the row lock",
        })
        .not.toBe(0);

    it("survives the server terminating its connections, idle or busy, and serves the next requests", async () => {
      // Busy: a PATCH waiting for a row lock holds a connection in the middle of a statement.
      const release = await lockPost(database(), postId);
      let during: TimedResponse;
      try {
        const waiting = patch({ title: "terminated while waiting" });
        await untilWaitingForTheLock();
        expect(await terminateBackends(database(), proxy.upstreamPorts())).toBeGreaterThan(0);
        during = await waiting;
      } finally {
        await release();
      }
      // 57P01 admin_shutdown: the database said "not now", not "your request is wrong". The
      // server rolled the statement back, so nothing changed.
      expectUnavailable(during, STATEMENT_TIMEOUT_MS + SLACK_MS);
      expect((await storedPost(database(), postId))?.title).toBe("original title");

      // The busy phase also ended the pool's idle connection: a request that takes it before the
      // pool has read its end is answered 503 and leaves the pool empty, which is the likely reason
      // one run of the whole suite found no connection to end below. So the service answers
      // again first, and only then is the pool filled for the idle phase.
      expect(await untilServing(5000)).toContain(200);
      // Idle: connections killed while in the pool are dropped by it before they are handed out.
      await Promise.all(Array.from({ length: POOL_SIZE }, () => get("/api/v1/posts")));
      expect(await terminateBackends(database(), proxy.upstreamPorts())).toBeGreaterThan(0);
      await sleep(100);
      const after = await Promise.all(Array.from({ length: 10 }, () => get("/api/v1/posts")));
      expect(after.map((response) => response.status)).toEqual(after.map(() => 200));
    });

    it("survives the network cutting idle pooled connections, and serves the next requests", async () => {
      await Promise.all(Array.from({ length: POOL_SIZE }, () => get("/api/v1/posts")));
      expect(proxy.connections).toBeGreaterThan(0);
      proxy.cut();
      await sleep(100);
      const after = await Promise.all(Array.from({ length: 10 }, () => get(`/api/v1/posts/${postId}`)));
      expect(after.map((response) => response.status)).toEqual(after.map(() => 200));
    });

    describe("with connections cut in the middle of statements", () => {
      it("answers 503 to the statements cut short, and serves the next requests", async () => {
        const release = await lockPost(database(), postId);
        let during: TimedResponse[];
        try {
          // Both pooled connections are inside a statement (waiting for the lock) when they are cut.
          const waiting = Promise.all(
            Array.from({ length: POOL_SIZE }, () => patch({ title: "cut while waiting" })),
          );
          await untilWaitingForTheLock();
          proxy.cut();
          during = await waiting;
        } finally {
          await release();
        }
        for (const response of during) expectUnavailable(response, STATEMENT_TIMEOUT_MS + SLACK_MS);
        // Whether a write cut short was applied is unknowable for the client (PostgreSQL notices a
        // lost client only when it answers, so the UPDATE waiting for the lock may commit): 503
        // promises "retry", not "nothing happened". Either value is right; nothing else is.
        expect(["original title", "cut while waiting"]).toContain(
          (await storedPost(database(), postId))?.title,
        );

        const after = await Promise.all(Array.from({ length: 10 }, () => get(`/api/v1/posts/${postId}`)));
        expect(after.map((response) => response.status)).toEqual(after.map(() => 200));
        await patch({ title: "original title" });
      });
    });
  },
);
