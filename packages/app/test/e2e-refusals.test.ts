import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { runCommand, TEST_JWT_SECRET } from "./support/service-process.js";

/** A TCP port on 127.0.0.1 where nothing listens. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("the service refuses to start, as a real process", () => {
  it("with a JWT_SECRET of 31 bytes: exit 1, and stderr says why", async () => {
    const run = await runCommand([], {
      JWT_SECRET: "x".repeat(31),
      PORT: "0",
      DATA_DIR: "/nonexistent/never-used",
    });

    expect(run.code).toBe(1);
    expect(run.stderr).toContain("refusing to start");
    expect(run.stderr).toContain("JWT_SECRET is 31 bytes long; it must be at least 32 bytes");
    expect(run.stdout).toBe("");
  });

  it("with a JWT_PREVIOUS_SECRETS key under 32 bytes: exit 1, naming the entry without echoing it", async () => {
    const run = await runCommand([], {
      JWT_SECRET: TEST_JWT_SECRET,
      JWT_PREVIOUS_SECRETS: `${TEST_JWT_SECRET}-older, too-short-a-key`,
      PORT: "0",
      DATA_DIR: "/nonexistent/never-used",
    });

    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      "JWT_PREVIOUS_SECRETS entry 2 of 2 is 15 bytes long; it must be at least 32 bytes",
    );
    expect(run.stderr).not.toContain("too-short-a-key");
    expect(run.stdout).toBe("");
  });

  it("with DATABASE_URL but no JWT_SECRET, listing every other problem too", async () => {
    const run = await runCommand([], {
      DATABASE_URL: "postgres://127.0.0.1/posts",
      PORT: "http",
      APP_TIME_ZONE: "Mars",
    });

    expect(run.code).toBe(1);
    expect(run.stderr).toContain("JWT_SECRET is required when DATABASE_URL is set");
    expect(run.stderr).toContain('PORT must be a whole number from 0 to 65535, got "http"');
    expect(run.stderr).toContain("APP_TIME_ZONE must be an IANA time zone name");
  });

  it("when the database does not answer within DB_STARTUP_TIMEOUT_MS: retries, then exit 1 without ever listening", async () => {
    const run = await runCommand([], {
      DATABASE_URL: `postgres://posts:secret-password@127.0.0.1:${await closedPort()}/posts`,
      JWT_SECRET: TEST_JWT_SECRET,
      PORT: "0",
      DB_STARTUP_TIMEOUT_MS: "1500",
    });

    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(
      run.logs.filter((line) => line.msg?.startsWith("the database does not answer yet")).length,
    ).toBeGreaterThan(0);
    expect(run.logs.at(-1)).toMatchObject({
      level: 60,
      msg: expect.stringMatching(/^start-up failed: the database did not answer within 1500 ms/),
    });
    expect(run.logs.some((line) => line.msg?.includes("listening"))).toBe(false);
    expect(run.stdout).not.toContain("secret-password");
  });

  it("`migrate` exits 1 with the reason when the database does not answer", async () => {
    const run = await runCommand(["migrate"], {
      DATABASE_URL: `postgres://127.0.0.1:${await closedPort()}/posts`,
      JWT_SECRET: TEST_JWT_SECRET,
      DB_STARTUP_TIMEOUT_MS: "0",
    });

    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.logs.at(-1)).toMatchObject({
      level: 60,
      msg: expect.stringMatching(/^migration failed: the database did not answer/),
    });
  });

  it("with an unknown command: exit 2 and the usage", async () => {
    const run = await runCommand(["serve-please"], {});

    expect(run.code).toBe(2);
    expect(run.stderr).toContain('unknown command "serve-please"');
    expect(run.stderr).toContain("Usage:");
  });
});
