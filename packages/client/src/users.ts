import { errorOf, jsonOf } from "./answers.js";
import type { Result } from "./result.js";
import type { CallOptions, Transport } from "./transport.js";
import type { Credentials, Deleted, Login, User } from "./types.js";

const USER = "/api/v1/user";

/** `users` of a client: register, log in, read and delete one's own account. */
export class Users {
  readonly #transport: Transport;

  /** Use `createClient(…).users`. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Registers an account. Never retried after a lost answer (a registration has no key): a
   * `network` or `timeout` failure may have registered it; log in to find out. Failures:
   * `validation`, `conflict` (email taken), `too-many-requests`, and the transport's.
   */
  async register(credentials: Credentials, options: CallOptions = {}): Promise<Result<User>> {
    const sent = await this.#transport.send(
      { method: "POST", path: USER, body: credentials, idempotent: false },
      options,
    );
    return jsonOf<User>(sent, 201);
  }

  /**
   * Logs in: the token to give `client.withToken`. Retried like a read (after a lost answer,
   * a 429's Retry-After or a 503): a login changes nothing but issues a token. Failures:
   * `unauthorized` (unknown email or wrong password, the same), `too-many-requests`, and the transport's.
   */
  async login(credentials: Credentials, options: CallOptions = {}): Promise<Result<Login>> {
    const sent = await this.#transport.send(
      { method: "POST", path: `${USER}/login`, body: credentials, idempotent: true },
      options,
    );
    return jsonOf<Login>(sent, 200);
  }

  /** The token's user. Failures: `unauthorized`, `forbidden` (no token), and the transport's. */
  async me(options: CallOptions = {}): Promise<Result<User>> {
    return jsonOf<User>(
      await this.#transport.send({ method: "GET", path: USER, idempotent: true }, options),
      200,
    );
  }

  /**
   * Deletes the token's user and all their posts. Retried like every delete; when a retry
   * after a lost answer finds the user gone (401), the result is `{ confirmed: false }`.
   */
  async deleteMe(options: CallOptions = {}): Promise<Result<Deleted>> {
    const sent = await this.#transport.send({ method: "DELETE", path: USER, idempotent: true }, options);
    if (!sent.ok) return sent;
    if (sent.value.status === 204) return { ok: true, value: { confirmed: true } };
    if (sent.value.status === 401 && sent.value.maybeApplied)
      return { ok: true, value: { confirmed: false } };
    return { ok: false, error: errorOf(sent.value) };
  }
}
