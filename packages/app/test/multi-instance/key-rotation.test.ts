import { createHash, createHmac } from "node:crypto";
import { openTestDatabase, postgresForTests, type TestDatabase } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it } from "vitest";
import { jsonRequest } from "../reliability/api-client.js";
import { type ListeningService, startService } from "../support/service-process.js";

const OLD_KEY = "the-old-signing-key-of-at-least-32-bytes";
const NEW_KEY = "the-new-signing-key-of-at-least-32-bytes";
const STRANGER_KEY = "a-key-neither-instance-was-ever-given-32b";

/** Whether `token` carries the HS256 signature `key` makes of its header and payload. */
function signedWith(token: string, key: string): boolean {
  const [header, payload, signature] = token.split(".");
  return createHmac("sha256", key).update(`${header}.${payload}`).digest("base64url") === signature;
}

/** The `kid` the service names `key` by: its RFC 7638 thumbprint (docs/authentication.md). */
function keyId(key: string): string {
  const k = Buffer.from(key).toString("base64url");
  return createHash("sha256").update(`{"k":"${k}","kty":"oct"}`).digest("base64url");
}

/** The header (`part` 0) or the payload (`part` 1) of `token`, decoded. */
function decoded(token: string, part: 0 | 1): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[part] ?? "", "base64url").toString());
}

/**
 * A token with the claims the service issues, signed with `key`, minted without the service:
 * without `kid` (by default), it is byte for byte what the service issued before tokens named
 * their key; `exp` is `lifetimeSeconds` from now.
 */
function mintToken(
  user: { readonly id: number; readonly email: string },
  key: string,
  { kid, lifetimeSeconds = 3600 }: { kid?: string; lifetimeSeconds?: number } = {},
): string {
  const iat = Math.floor(Date.now() / 1000);
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const input = `${part({ alg: "HS256", typ: "JWT", ...(kid === undefined ? {} : { kid }) })}.${part({
    iss: "posts-service",
    iat,
    exp: iat + lifetimeSeconds,
    sub: String(user.id),
    email: user.email,
    roles: [{ authority: "ROLE_USER" }],
  })}`;
  return `${input}.${createHmac("sha256", key).update(input).digest("base64url")}`;
}

// The rotation docs/authentication.md#rotating-the-signing-key describes: every instance gets the
// new key as JWT_SECRET and the old one as JWT_PREVIOUS_SECRETS, one instance after the other; the
// old key goes once its tokens expired.
describeNeeding(
  await postgresForTests(),
  "a token key rotation across two instances, rolled one at a time",
  () => {
    let database: TestDatabase | undefined;
    const running = new Set<ListeningService>();
    // If the test process ends without afterAll (a crash, a kill), the instances go with it.
    const killRunning = () => {
      for (const instance of running) instance.child.kill("SIGKILL");
    };
    let instanceA: ListeningService;
    let instanceB: ListeningService;
    const user = { id: 0, email: `rotation-${Date.now()}@example.com`, password: "a long password" };

    const start = async (keys: { JWT_SECRET: string; JWT_PREVIOUS_SECRETS?: string }) => {
      if (database?.connectionString === undefined)
        throw new Error("no PostgreSQL database for the instances");
      const instance = await startService({
        DATABASE_URL: database.connectionString,
        DB_POOL_SIZE: "2",
        ...keys,
      });
      running.add(instance);
      return instance;
    };
    const restart = async (instance: ListeningService, keys: Parameters<typeof start>[0]) => {
      expect((await instance.stop()).code).toBe(0);
      running.delete(instance);
      return start(keys);
    };
    const me = (instance: ListeningService, token: string) =>
      fetch(`${instance.url}/api/v1/user`, { headers: { "x-auth-token": token } });
    const logIn = async (instance: ListeningService) => {
      const response = await fetch(`${instance.url}/api/v1/user/login`, jsonRequest("POST", user));
      expect(response.status).toBe(200);
      return ((await response.json()) as { token: string }).token;
    };
    /** The status each instance answers GET /api/v1/user with `token`, and the id of the 200s. */
    const answers = async (token: string) =>
      Promise.all(
        [instanceA, instanceB].map(async (instance) => {
          const response = await me(instance, token);
          const body = (await response.json()) as { id?: number; error?: string };
          return response.status === 200 ? { status: 200, id: body.id } : { status: response.status, body };
        }),
      );
    const accepted = { status: 200, id: expect.any(Number) };
    const refused = { status: 401, body: { error: expect.any(String) } };
    // Restarting instances (a stop, then tsx loading the sources again) takes seconds on a busy machine.
    const RESTARTS = { timeout: 180_000 };

    beforeAll(async () => {
      process.once("exit", killRunning);
      database = await openTestDatabase("postgres");
      // A still on the old key alone; B already rolled: new key, old one as previous.
      instanceA = await start({ JWT_SECRET: OLD_KEY });
      instanceB = await start({ JWT_SECRET: NEW_KEY, JWT_PREVIOUS_SECRETS: OLD_KEY });
      const registered = await fetch(`${instanceA.url}/api/v1/user`, jsonRequest("POST", user));
      expect(registered.status).toBe(201);
      user.id = ((await registered.json()) as { id: number }).id;
    }, RESTARTS.timeout);

    afterAll(async () => {
      await Promise.all([...running].map((instance) => instance.stop()));
      running.clear();
      process.removeListener("exit", killRunning);
      await database?.close();
    });

    it("mid-rotation: a token of A (old key) works on B; a token of B (new key) is 401 on A until A is rolled", async () => {
      const tokenOfA = await logIn(instanceA);
      const tokenOfB = await logIn(instanceB);
      expect(signedWith(tokenOfA, OLD_KEY)).toBe(true);
      expect(signedWith(tokenOfB, NEW_KEY)).toBe(true);
      expect([decoded(tokenOfA, 0).kid, decoded(tokenOfB, 0).kid]).toEqual([keyId(OLD_KEY), keyId(NEW_KEY)]);

      expect(await answers(tokenOfA)).toEqual([accepted, accepted]);
      expect(await answers(tokenOfB)).toEqual([refused, accepted]);
      expect((await answers(tokenOfA))[1]).toEqual({ status: 200, id: user.id });
    });

    it("a token signed with a key in neither set is 401 on both; one minted with the old key outside them works on both", async () => {
      expect(await answers(mintToken(user, STRANGER_KEY))).toEqual([refused, refused]);
      expect(await answers(mintToken(user, OLD_KEY))).toEqual([accepted, accepted]);
      expect(await answers(mintToken(user, OLD_KEY, { kid: keyId(OLD_KEY) }))).toEqual([accepted, accepted]);
    });

    it("a kid is checked with the key it names alone, by the instances holding that key; a kid naming no key held is 401", async () => {
      // B holds both keys, and still refuses one key's signature under the other's kid.
      expect(await answers(mintToken(user, NEW_KEY, { kid: keyId(OLD_KEY) }))).toEqual([refused, refused]);
      expect(await answers(mintToken(user, OLD_KEY, { kid: keyId(NEW_KEY) }))).toEqual([refused, refused]);
      expect(await answers(mintToken(user, NEW_KEY, { kid: keyId(NEW_KEY) }))).toEqual([refused, accepted]);
      expect(await answers(mintToken(user, OLD_KEY, { kid: keyId(STRANGER_KEY) }))).toEqual([
        refused,
        refused,
      ]);
    });

    it("a token without kid, as issued before tokens named their key, works on both until its exp, then is 401 on both", async () => {
      const token = mintToken(user, OLD_KEY, { lifetimeSeconds: 5 });
      expect(await answers(token)).toEqual([accepted, accepted]);
      const expiry = ((decoded(token, 1).exp as number) + 1) * 1000;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiry - Date.now())));
      const expired = { status: 401, body: { error: "인증 토큰이 만료되었습니다." } };
      expect(await answers(token)).toEqual([expired, expired]);
    });

    it(
      "after A is rolled the same way, tokens of both keys work on both, and A signs with the new key",
      RESTARTS,
      async () => {
        const tokenOfOldA = await logIn(instanceA);
        const tokenOfB = await logIn(instanceB);
        instanceA = await restart(instanceA, { JWT_SECRET: NEW_KEY, JWT_PREVIOUS_SECRETS: OLD_KEY });

        expect(await answers(tokenOfOldA)).toEqual([accepted, accepted]);
        expect(await answers(tokenOfB)).toEqual([accepted, accepted]);
        expect(await answers(mintToken(user, OLD_KEY))).toEqual([accepted, accepted]);
        const tokenOfNewA = await logIn(instanceA);
        expect(signedWith(tokenOfNewA, NEW_KEY)).toBe(true);
        expect(decoded(tokenOfNewA, 0).kid).toBe(keyId(NEW_KEY));
        expect(await answers(mintToken(user, STRANGER_KEY))).toEqual([refused, refused]);
      },
    );

    it(
      "once the old key is removed from both, its tokens are 401 everywhere, with kid or without, and the new key's still work",
      RESTARTS,
      async () => {
        const tokenOfOldKey = mintToken(user, OLD_KEY);
        const namedTokenOfOldKey = mintToken(user, OLD_KEY, { kid: keyId(OLD_KEY) });
        const tokenOfNewKey = await logIn(instanceB);
        [instanceA, instanceB] = await Promise.all([
          restart(instanceA, { JWT_SECRET: NEW_KEY }),
          restart(instanceB, { JWT_SECRET: NEW_KEY }),
        ]);

        expect(await answers(tokenOfOldKey)).toEqual([refused, refused]);
        expect(await answers(namedTokenOfOldKey)).toEqual([refused, refused]);
        expect(await answers(tokenOfNewKey)).toEqual([accepted, accepted]);
      },
    );
  },
);
