import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadOrCreateJwtSecret } from "../src/load-or-create-jwt-secret.js";

describe("loadOrCreateJwtSecret", () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "posts-secret-"));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("creates the data directory and a 48-byte base64url key readable by the owner only", async () => {
    const file = join(root, "nested", "data", "jwt-secret");
    const stored = await loadOrCreateJwtSecret(file);

    expect(stored.created).toBe(true);
    expect(stored.secret).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(Buffer.from(stored.secret, "base64url")).toHaveLength(48);
    expect((await readFile(file, "utf8")).trim()).toBe(stored.secret);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readdir(join(root, "nested", "data"))).toEqual(["jwt-secret"]);
  });

  it("reuses the key on the next start", async () => {
    const file = join(root, "jwt-secret");
    const first = await loadOrCreateJwtSecret(file);
    const second = await loadOrCreateJwtSecret(file);

    expect(second).toEqual({ secret: first.secret, created: false });
  });

  it("gives every concurrent caller the same key", async () => {
    const file = join(root, "jwt-secret");
    const results = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateJwtSecret(file)));

    expect(new Set(results.map((result) => result.secret)).size).toBe(1);
    expect(results.filter((result) => result.created)).toHaveLength(1);
    expect(await readdir(root)).toEqual(["jwt-secret"]);
  });

  it("reads a key written by hand, ignoring the trailing newline", async () => {
    const file = join(root, "jwt-secret");
    await writeFile(file, `${"k".repeat(40)}\n`, { mode: 0o600 });

    expect(await loadOrCreateJwtSecret(file)).toEqual({ secret: "k".repeat(40), created: false });
  });

  it("refuses a stored key shorter than 32 bytes without showing it", async () => {
    const file = join(root, "jwt-secret");
    await writeFile(file, "short-secret", { mode: 0o600 });

    const failure = loadOrCreateJwtSecret(file);
    await expect(failure).rejects.toThrow(/shorter than 32 bytes; delete the file/);
    await expect(failure).rejects.not.toThrow(/short-secret/);
  });
});
