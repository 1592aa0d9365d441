import { randomBytes } from "node:crypto";
import { link, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { MIN_JWT_SECRET_BYTES } from "./config.js";

/** A signing key read from its file, and whether this call is the one that made it. */
export interface StoredJwtSecret {
  readonly secret: string;
  readonly created: boolean;
}

/**
 * The JWT key kept in `file`: read when the file exists, otherwise a fresh random key
 * (48 random bytes, base64url) written there with mode 0600, its directory created as needed.
 * The file appears complete or not at all, and when two processes race the first one wins and
 * both answer its key. Rejects with a readable message when the file holds a key that is too
 * short; the key itself never appears in a message.
 */
export async function loadOrCreateJwtSecret(file: string): Promise<StoredJwtSecret> {
  await mkdir(dirname(file), { recursive: true });
  const existing = await readSecret(file);
  if (existing !== undefined) return { secret: existing, created: false };

  const secret = randomBytes(48).toString("base64url");
  // Written aside then hard-linked into place: link fails if the name exists, so a crash never
  // leaves a half-written key and a concurrent start never overwrites the winner's.
  const pending = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(pending, `${secret}\n`, { mode: 0o600, flag: "wx" });
    await link(pending, file);
    return { secret, created: true };
  } catch (error) {
    if (!isErrorCode(error, "EEXIST")) throw error;
    const winner = await readSecret(file);
    if (winner === undefined) throw error;
    return { secret: winner, created: false };
  } finally {
    await rm(pending, { force: true });
  }
}

async function readSecret(file: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if (isErrorCode(error, "ENOENT")) return undefined;
    throw error;
  }
  // Trimmed so that an editor's trailing newline does not become part of the key.
  const secret = text.trim();
  if (Buffer.byteLength(secret, "utf8") < MIN_JWT_SECRET_BYTES) {
    throw new Error(
      `${file} holds a JWT secret shorter than ${MIN_JWT_SECRET_BYTES} bytes; ` +
        "delete the file to have a new one generated, or set JWT_SECRET.",
    );
  }
  return secret;
}

function isErrorCode(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}
