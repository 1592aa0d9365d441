import { Events } from "./events.js";
import { Posts } from "./posts.js";
import { type ClientOptions, Transport } from "./transport.js";
import { Users } from "./users.js";

/** A client of the posts service. Its methods answer {@link Result} values and never throw for an HTTP answer. */
export interface PostsClient {
  readonly posts: Posts;
  readonly users: Users;
  /** The change feed: `for await (const event of client.events.follow())`. */
  readonly events: Events;
  /** The same client, authenticated with `token` (a login's `token`). */
  withToken(token: string): PostsClient;
}

/**
 * A client of the service at `options.baseUrl`: `createClient({ baseUrl }).posts.get(1)`.
 * Every create carries an Idempotency-Key; idempotent requests are retried on network errors,
 * timeouts, 429 and 503 with jittered exponential backoff that honours Retry-After, within
 * bounded attempts and time; updates send If-Match.
 */
export function createClient(options: ClientOptions): PostsClient {
  return clientOver(new Transport(options));
}

function clientOver(transport: Transport): PostsClient {
  return {
    posts: new Posts(transport),
    users: new Users(transport),
    events: new Events(transport.options),
    withToken: (token) => clientOver(transport.withToken(token)),
  };
}
