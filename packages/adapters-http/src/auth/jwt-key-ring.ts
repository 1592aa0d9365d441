import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from "node:crypto";
import { jwtKeyId } from "./jwt-key-id.js";

/**
 * How many distinct headers {@link JwtKeyRing.keyFor} remembers. The service's own tokens share
 * one header per key, so a handful is all that ever hits; the bound keeps headers a client varies
 * at will from growing the memory.
 */
const REMEMBERED_HEADERS = 64;

interface HeldKey {
  readonly secret: string;
  readonly hmacKey: KeyObject;
}

/**
 * The HS256 keys tokens are verified with: the current key (`JWT_SECRET`, which signs) and the
 * previous ones of a rotation in progress, each named by its {@link jwtKeyId}. It only chooses the
 * key; the token is then verified with that key alone, under every other rule.
 */
export class JwtKeyRing {
  /** The current key first, then the previous ones in their order, each once. */
  readonly secrets: readonly string[];
  readonly #byId: ReadonlyMap<string, string>;
  readonly #held: readonly HeldKey[];
  /** The key a header whose `kid` names a held key chooses, by the header's base64url text. */
  readonly #byHeader = new Map<string, string>();

  constructor(secret: string, previousSecrets: readonly string[] = []) {
    this.secrets = [...new Set([secret, ...previousSecrets])];
    this.#byId = new Map(this.secrets.map((key) => [jwtKeyId(key), key]));
    this.#held = this.secrets.map((key) => ({
      secret: key,
      hmacKey: createSecretKey(Buffer.from(key, "utf8")),
    }));
  }

  /**
   * The one key `token` may be verified with, or `undefined` when its header has a `kid` that
   * names no key held. A `kid` names its key and no other. Without one, the token is the current
   * key's, or a previous key's when that key's HMAC is its signature: what trying the keys in turn
   * finds, at one HMAC per key instead of one failed verification each. A signature no key made,
   * or a header that cannot be read, gets the current key, whose verification then refuses it.
   *
   * Only the header's `kid` and `alg` are read here, leniently; the verification decodes the
   * token strictly, so a token read otherwise here is refused there whatever key it gets.
   */
  keyFor(token: string): string | undefined {
    // The choice for a header with a `kid` is a function of the header's text alone, so it is
    // remembered: every request then skips decoding and parsing a header it has seen.
    const segment = token.slice(0, Math.max(0, token.indexOf(".")));
    const remembered = this.#byHeader.get(segment);
    if (remembered !== undefined) return remembered;
    const header = headerOf(token);
    const current = this.secrets[0] as string;
    if (header === undefined) return current;
    const { kid, alg } = header;
    if (kid !== undefined) {
      const named = typeof kid === "string" ? this.#byId.get(kid) : undefined;
      if (named !== undefined && this.#byHeader.size < REMEMBERED_HEADERS) this.#byHeader.set(segment, named);
      return named;
    }
    if (this.#held.length === 1 || alg !== "HS256") return current;
    const end = token.lastIndexOf(".");
    const input = token.slice(0, end);
    const sent = Buffer.from(token.slice(end + 1), "base64url");
    for (const { secret, hmacKey } of this.#held) {
      const made = createHmac("sha256", hmacKey).update(input).digest();
      // In constant time: how much of a forged signature matches must not show in the timing.
      if (made.length === sent.length && timingSafeEqual(made, sent)) return secret;
    }
    return current;
  }
}

/** The JOSE header of a compact JWT, or `undefined` when it is not a JSON object. */
function headerOf(token: string): { readonly kid?: unknown; readonly alg?: unknown } | undefined {
  const end = token.indexOf(".");
  if (end < 0) return undefined;
  try {
    const header: unknown = JSON.parse(Buffer.from(token.slice(0, end), "base64url").toString("utf8"));
    return typeof header === "object" && header !== null && !Array.isArray(header) ? header : undefined;
  } catch {
    return undefined;
  }
}
