import { describe, expect, it } from "vitest";
import { createLogger } from "../src/create-logger.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  return { lines, stream: { write: (line: string) => void lines.push(JSON.parse(line)) } };
}

describe("createLogger", () => {
  it("writes JSON at the configured level", () => {
    const { lines, stream } = capture();
    const logger = createLogger("warn", stream);
    logger.info("hidden");
    logger.warn({ port: 1 }, "shown");

    expect(lines).toEqual([expect.objectContaining({ level: 40, msg: "shown", port: 1, service: "posts" })]);
  });

  it("never writes tokens, passwords, hashes or secrets", () => {
    const { lines, stream } = capture();
    const logger = createLogger("info", stream);
    logger.info({
      req: {
        headers: { "x-auth-token": "eyJ.token", authorization: "Bearer eyJ", cookie: "a=b", host: "h" },
      },
      body: { email: "a@b.c", password: "hunter2hunter2" },
      user: { id: 1, passwordHash: "$argon2id$v=19$..." },
      jwt: { secret: "s".repeat(48) },
      password: "top-level",
    });

    const text = JSON.stringify(lines);
    for (const leaked of ["eyJ", "hunter2", "$argon2id", "s".repeat(48), "top-level", "a=b"]) {
      expect(text).not.toContain(leaked);
    }
    expect(lines[0]).toMatchObject({
      req: { headers: { host: "h" } },
      body: { email: "a@b.c" },
      user: { id: 1 },
    });
  });
});
