import type { TestDatabase } from "@posts/adapters-postgres/testing";
import { openTestDatabase, postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it } from "vitest";
import { registerAndLogIn } from "./support/register-and-log-in.js";
import type { ListeningService } from "./support/service-process.js";
import { runCommand, startService, TEST_JWT_SECRET } from "./support/service-process.js";
import { shutDownDuringARequest } from "./support/shut-down-during-a-request.js";
import { walkThroughConditionalRequests } from "./support/walk-through-conditional-requests.js";
import { walkThroughTheApi } from "./support/walk-through-the-api.js";

describeNeeding(await postgresForTests(), "the service on PostgreSQL, as a real process", () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let service: ListeningService | undefined;

  beforeAll(async () => {
    database = await openTestDatabase("postgres", { migrate: false });
    expect(database.engine).toBe("postgres");
    env = {
      DATABASE_URL: database.connectionString ?? "",
      JWT_SECRET: TEST_JWT_SECRET,
      // Far from UTC, no daylight saving: timestamps must come out in this zone.
      APP_TIME_ZONE: "Asia/Seoul",
    };
  });
  afterAll(async () => {
    await service?.stop();
    await database?.close();
  });

  it("`migrate` run twice at once: both exit 0, one applies the migrations, the other finds nothing to do", async () => {
    const runs = await Promise.all([runCommand(["migrate"], env), runCommand(["migrate"], env)]);
    for (const run of runs) expect(run.code, run.stdout + run.stderr).toBe(0);

    const applied = runs.map(
      (run) => run.logs.find((line) => Array.isArray(line.applied))?.applied as string[],
    );
    const [none, all] = [...applied].sort((a, b) => a.length - b.length);
    expect(none).toEqual([]);
    expect(all?.length).toBeGreaterThan(0);
  });

  it("walks register → login → create → list → get → patch → delete → delete me with the contract's wire format", async () => {
    service = await startService(env);
    expect(service.logs).toContainEqual(
      expect.objectContaining({ database: "postgres", timeZone: "Asia/Seoul" }),
    );
    await walkThroughTheApi(service.url, "+09:00");
  });

  it("revalidates with ETags (304), refuses a stale If-Match (412), replays an idempotent retry and searches", async () => {
    if (service === undefined) throw new Error("the service did not start");
    await walkThroughConditionalRequests(service.url);
  });

  it("on SIGTERM, finishes the request in flight, refuses new connections and exits 0", async () => {
    if (service === undefined) throw new Error("the service did not start");
    const { token } = await registerAndLogIn(service.url);
    await shutDownDuringARequest(service, token);
    service = undefined;
  });
});
