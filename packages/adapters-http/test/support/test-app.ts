import { buildHttpApp, type HttpAppOptions, type HttpTimeouts, JwtTokenIssuer } from "@posts/adapters-http";
import type { Dependencies } from "@posts/domain";
import {
  aUser,
  InMemoryAttemptCounter,
  type InMemoryDependencies,
  inMemoryDependencies,
} from "@posts/domain/testing";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll } from "vitest";
import { TEST_ISSUER, TEST_SECRET, tokenFor } from "./mint-token.js";

/** An app over in-memory ports, with the real JWT issuer (the domain's fake one mints no JWTs). */
export interface TestApp {
  readonly app: FastifyInstance;
  readonly deps: InMemoryDependencies & Dependencies;
  /** Registers a user straight in the repository and answers it with a valid token. */
  aUserWithToken(): Promise<{ id: number; email: string; token: string }>;
}

/** Options a test may override; `timeouts` replace only the bounds they name. */
export type TestAppOverrides = Partial<Omit<HttpAppOptions, "timeouts">> & {
  readonly timeouts?: Partial<HttpTimeouts>;
};

/** Builds a test app; `overrides` replace any option (deps included). */
export async function buildTestApp(overrides: TestAppOverrides = {}): Promise<TestApp> {
  const fakes = inMemoryDependencies();
  const deps = { ...fakes, tokens: new JwtTokenIssuer({ secret: TEST_SECRET, issuer: TEST_ISSUER }) };
  const app = await buildHttpApp({
    deps,
    jwt: { secret: TEST_SECRET, issuer: TEST_ISSUER },
    bodyLimit: 16 * 1024 * 1024,
    timeZone: "UTC",
    logger: false,
    // Tests log in many times from one address; the throttle's own tests set their limits.
    loginThrottle: { max: 10_000, windowMs: 60_000 },
    attemptCounter: new InMemoryAttemptCounter(),
    changeEvents: fakes.database.events,
    ...overrides,
    // The service's own bounds, so that tests see what it serves.
    timeouts: { requestMs: 30_000, connectionMs: 60_000, keepAliveMs: 72_000, ...overrides.timeouts },
  });
  return {
    app,
    deps: deps as unknown as InMemoryDependencies & Dependencies,
    async aUserWithToken() {
      const user = await aUser(deps.users, { passwordHash: await deps.hasher.hash("password123") });
      return { id: user.id, email: user.email, token: tokenFor(user) };
    },
  };
}

/** One app for the enclosing describe block (built before its first test, closed after its last). */
export function useTestApp(overrides: TestAppOverrides = {}): () => TestApp {
  let testApp: TestApp | undefined;
  beforeAll(async () => {
    testApp = await buildTestApp(overrides);
  });
  afterAll(async () => {
    await testApp?.app.close();
  });
  return () => {
    if (testApp === undefined) throw new Error("test app not built");
    return testApp;
  };
}
