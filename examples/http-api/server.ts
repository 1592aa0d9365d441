import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { Argon2PasswordHasher, buildHttpApp, JwtTokenIssuer } from "@posts/adapters-http";
import * as postgres from "@posts/adapters-postgres";
import { systemClock } from "@posts/domain";

// The posts HTTP API assembled from the packages, on PostgreSQL embedded in this process (PGlite).
const database = await postgres.createPgliteDatabase({ dataDir: process.env.DATA_DIR ?? "data" });
await postgres.migrateToLatest(database.db);
// A key for this run only: tokens die with the process. Give JWT_SECRET (32 bytes or more) to keep them.
const jwt = { secret: process.env.JWT_SECRET ?? randomBytes(48).toString("base64"), issuer: "posts-example" };
const app = await buildHttpApp({
  deps: {
    posts: new postgres.PostgresPostRepository(database.db),
    users: new postgres.PostgresUserRepository(database.db),
    clock: systemClock,
    hasher: await Argon2PasswordHasher.create(),
    tokens: new JwtTokenIssuer(jwt),
  },
  jwt,
  attemptCounter: new postgres.PostgresAttemptCounter(database.db), // login and sign-up throttles
  loginThrottle: { max: 10, windowMs: 60_000 }, // failed logins per email per minute (5x per address)
  timeouts: { requestMs: 30_000, connectionMs: 60_000, keepAliveMs: 72_000 },
  bodyLimit: 1024 * 1024,
  timeZone: "UTC",
  isUnavailable: postgres.isDatabaseUnavailable,
});
process.once("SIGTERM", async () => {
  await app.close(); // the requests in flight are answered first
  await database.close();
});

await app.listen({ port: Number(process.env.PORT ?? 8080), host: "127.0.0.1" });
console.log(`posts API on http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
