import { randomBytes } from "node:crypto";
import { type Algorithm, hash, verify } from "@node-rs/argon2";
import type { PasswordHasher } from "@posts/domain";

/** Cost parameters of argon2id. */
export interface Argon2Options {
  /** KiB of memory per hash. Default 19 456 (19 MiB). */
  readonly memoryCost?: number;
  /** Passes over the memory. Default 2. */
  readonly timeCost?: number;
  /** Lanes. Default 1. */
  readonly parallelism?: number;
}

// `Algorithm` is a const enum in @node-rs/argon2's types, which isolated modules cannot read.
const ARGON2ID = 2 as Algorithm;

type Settings = Readonly<Required<Argon2Options> & { algorithm: Algorithm }>;

/**
 * argon2id password hashes in PHC format, computed by @node-rs/argon2 on libuv's thread pool
 * (never on the event loop). The defaults are OWASP's minimum for argon2id (m=19 MiB, t=2,
 * p=1), about 20–50 ms per hash on a current core. `verify` reads the cost parameters from
 * the stored hash, so raising them later keeps old hashes valid.
 */
export class Argon2PasswordHasher implements PasswordHasher {
  readonly decoyHash: string;
  readonly #options: Settings;

  private constructor(options: Settings, decoyHash: string) {
    this.#options = options;
    this.decoyHash = decoyHash;
  }

  /** A hasher with these costs, whose decoy is the hash of random bytes nobody knows. */
  static async create(options: Argon2Options = {}): Promise<Argon2PasswordHasher> {
    const settings: Settings = {
      memoryCost: options.memoryCost ?? 19_456,
      timeCost: options.timeCost ?? 2,
      parallelism: options.parallelism ?? 1,
      algorithm: ARGON2ID,
    };
    const decoyHash = await hash(randomBytes(32).toString("base64url"), settings);
    return new Argon2PasswordHasher(settings, decoyHash);
  }

  /** A new salted argon2id hash of `password`. */
  async hash(password: string): Promise<string> {
    return hash(password, this.#options);
  }

  /** Whether `password` matches `hash`; `false`, never an exception, for a hash it cannot read. */
  async verify(hashed: string, password: string): Promise<boolean> {
    try {
      return await verify(hashed, password);
    } catch {
      return false;
    }
  }
}
