import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerAndLogIn } from "./support/register-and-log-in.js";
import type { ListeningService } from "./support/service-process.js";
import { runCommand, startService } from "./support/service-process.js";
import { shutDownDuringARequest } from "./support/shut-down-during-a-request.js";
import { walkThroughConditionalRequests } from "./support/walk-through-conditional-requests.js";
import { walkThroughTheApi } from "./support/walk-through-the-api.js";

// One data directory for the whole file, in order: PGlite's initdb costs seconds, reopening does not.
describe("the service on the embedded database (PGlite), as a real process", () => {
  let dataDir: string;
  let service: ListeningService | undefined;
  let survivor: { token: string; userId: number; postId: number } | undefined;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "posts-e2e-"));
  });
  afterAll(async () => {
    await service?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("`migrate` creates the schema and exits 0", async () => {
    const run = await runCommand(["migrate"], { DATA_DIR: dataDir });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const applied = run.logs.find((line) => Array.isArray(line.applied))?.applied as string[];
    expect(applied.length).toBeGreaterThan(0);
  });

  it("starts without JWT_SECRET: generates a key in DATA_DIR/jwt-secret, mode 0600, and says so without showing it", async () => {
    service = await startService({ DATA_DIR: dataDir });

    const file = join(dataDir, "jwt-secret");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const secret = (await readFile(file, "utf8")).trim();
    expect(Buffer.byteLength(secret)).toBeGreaterThanOrEqual(32);
    expect(service.logs).toContainEqual(
      expect.objectContaining({ file, msg: expect.stringContaining("generated a signing key") }),
    );
    expect(service.stdout()).not.toContain(secret);
    // The migrations ran again at start (MIGRATE_ON_START) and found nothing to do.
    expect(service.logs).toContainEqual(expect.objectContaining({ msg: "database schema is up to date" }));
  });

  it("walks register → login → create → list → get → patch → delete → delete me with the contract's wire format", async () => {
    if (service === undefined) throw new Error("the service did not start");
    await walkThroughTheApi(service.url, "Z");
  });

  it("revalidates with ETags (304), refuses a stale If-Match (412), replays an idempotent retry and searches", async () => {
    if (service === undefined) throw new Error("the service did not start");
    await walkThroughConditionalRequests(service.url);
  });

  it("on SIGTERM, finishes the request in flight, refuses new connections and exits 0", async () => {
    if (service === undefined) throw new Error("the service did not start");
    const { token, userId } = await registerAndLogIn(service.url);
    const postId = await shutDownDuringARequest(service, token);
    survivor = { token, userId, postId };
    service = undefined;
  });

  it("restarts on the same directory: the key is reused, so tokens stay valid, and the data is still there", async () => {
    if (survivor === undefined) throw new Error("the previous test left nothing to check");
    service = await startService({ DATA_DIR: dataDir });
    expect(service.logs).toContainEqual(
      expect.objectContaining({ msg: expect.stringContaining("using the signing key stored in") }),
    );

    const me = await fetch(`${service.url}/api/v1/user`, { headers: { "x-auth-token": survivor.token } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ id: survivor.userId });
    const post = await fetch(`${service.url}/api/v1/posts/${survivor.postId}`);
    expect(post.status).toBe(200);
    expect(await post.json()).toMatchObject({ title: "in flight", user: { id: survivor.userId } });

    expect(await service.stop()).toMatchObject({ code: 0, signal: null });
    service = undefined;
  });
});
