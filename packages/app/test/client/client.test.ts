import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serverOf, useSuiteDatabase } from "../reliability/postgres-suite.js";
import { TcpProxy } from "../reliability/tcp-proxy.js";
import { type ListeningService, startService, TEST_JWT_SECRET } from "../support/service-process.js";
import {
  alteredTypes,
  checkGeneratedTypes,
  clientOf,
  followTheFeedThroughACut,
  honourRetryAfter,
  postsOf,
  refuseAStaleUpdate,
  signedUp,
  succeeded,
  surviveLostAnswers,
  walkTheFlow,
} from "./client-on-the-service.js";

// Two failed logins of one email within two seconds are enough to be answered 429.
const THROTTLE = { LOGIN_THROTTLE_MAX: "2", LOGIN_THROTTLE_WINDOW_MS: "2000" };

/** Stops what a test file started even when the run is cut short. */
function onExit(stop: () => void): () => void {
  process.once("exit", stop);
  return () => process.off("exit", stop);
}

describe("@posts/client on the service with the embedded database (PGlite), a real process behind a TCP proxy", () => {
  let dataDir = "";
  let service: ListeningService | undefined;
  let proxy: TcpProxy | undefined;
  let forget = () => {};

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "posts-client-"));
    service = await startService({ DATA_DIR: dataDir, ...THROTTLE });
    forget = onExit(() => service?.child.kill("SIGKILL"));
    proxy = await TcpProxy.start({ host: "127.0.0.1", port: service.port });
  });
  afterAll(async () => {
    await proxy?.close();
    await service?.stop();
    forget();
    if (dataDir !== "") await rm(dataDir, { recursive: true, force: true });
  });
  const url = () => service?.url ?? expect.fail("the service did not start");
  const proxiedUrl = () => `http://127.0.0.1:${proxy?.port ?? expect.fail("no proxy")}`;

  it("walks the whole flow: register, log in, create, get, update with If-Match, pages, search, delete", async () => {
    await walkTheFlow(url());
  });

  it("answers a typed precondition-failed to an update or delete based on a stale version", async () => {
    await refuseAStaleUpdate(url());
  });

  it("retries a create whose answer was cut with the same key (exactly one post), and a delete truthfully", async () => {
    await surviveLostAnswers(proxy ?? expect.fail("no proxy"), proxiedUrl());
  });

  it("honours Retry-After on 429 and then succeeds", async () => {
    await honourRetryAfter(url());
  });

  it("follows the change feed across a cut stream: resumes with Last-Event-ID, every event once", async () => {
    await followTheFeedThroughACut(proxy ?? expect.fail("no proxy"), proxiedUrl(), url());
  });

  it("its committed types are what the served OpenAPI document generates, and the check fails when they differ", async () => {
    const same = await checkGeneratedTypes(url());
    expect(same.code, same.output).toBe(0);
    const altered = join(dataDir, "altered-openapi.ts");
    await alteredTypes(altered);
    const differs = await checkGeneratedTypes(url(), altered);
    expect(differs.code, differs.output).toBe(1);
    expect(differs.output).toContain("differs from the types of the served OpenAPI document");
  });
});

describeNeeding(
  await postgresForTests(),
  "@posts/client on the service with PostgreSQL, a real process, TCP proxies before it and its database",
  () => {
    const database = useSuiteDatabase();
    let service: ListeningService | undefined;
    let databaseProxy: TcpProxy | undefined;
    let serviceProxy: TcpProxy | undefined;
    let forget = () => {};

    beforeAll(async () => {
      databaseProxy = await TcpProxy.start(serverOf(database().connectionString));
      service = await startService({
        DATABASE_URL: databaseProxy.proxied(database().connectionString),
        JWT_SECRET: TEST_JWT_SECRET,
        DB_CONNECT_TIMEOUT_MS: "1000",
        ...THROTTLE,
      });
      forget = onExit(() => service?.child.kill("SIGKILL"));
      serviceProxy = await TcpProxy.start({ host: "127.0.0.1", port: service.port });
    });
    afterAll(async () => {
      await serviceProxy?.close();
      await service?.stop();
      await databaseProxy?.close();
      forget();
    });
    const url = () => service?.url ?? expect.fail("the service did not start");

    it("walks the whole flow: register, log in, create, get, update with If-Match, pages, search, delete", async () => {
      await walkTheFlow(url());
    });

    it("answers a typed precondition-failed to an update or delete based on a stale version", async () => {
      await refuseAStaleUpdate(url());
    });

    it("retries a create whose answer was cut with the same key (exactly one post), and a delete truthfully", async () => {
      const proxy = serviceProxy ?? expect.fail("no proxy");
      await surviveLostAnswers(proxy, `http://127.0.0.1:${proxy.port}`);
    });

    it("honours Retry-After on 429 and then succeeds", async () => {
      await honourRetryAfter(url());
    });

    it("follows the change feed across a cut stream: resumes with Last-Event-ID, every event once", async () => {
      const proxy = serviceProxy ?? expect.fail("no proxy");
      await followTheFeedThroughACut(proxy, `http://127.0.0.1:${proxy.port}`, url());
    });

    it("rides out a 503 window (database refused) with retries, creating the post once; a registration is not retried", async () => {
      const { client, user, sent } = await signedUp(url());
      const proxy = databaseProxy ?? expect.fail("no proxy");
      sent.length = 0;
      await proxy.refuse();
      const restored = new Promise((resolve) => setTimeout(resolve, 2500)).then(() => proxy.restore());
      try {
        const { client: anonymous, sent: registrations } = clientOf(url());
        const register = anonymous.users.register({
          email: `x-${crypto.randomUUID()}@example.com`,
          password: "a long password",
        });
        const created = await client.posts.create({ title: "after the window", content: "c" });
        expect(await register).toMatchObject({ ok: false, error: { kind: "unavailable", status: 503 } });
        expect(registrations).toHaveLength(1);
        const { id } = succeeded(created);
        const statuses = sent.map((request) => request.status);
        expect(statuses[0]).toBe(503);
        expect(statuses.at(-1)).toBe(201);
        expect(statuses.slice(0, -1).every((status) => status === 503)).toBe(true);
        expect(new Set(sent.map((request) => request.headers.get("idempotency-key"))).size).toBe(1);
        expect((await postsOf(client, user.id)).map((post) => post.id)).toEqual([id]);
      } finally {
        await restored;
      }
    });
  },
);
