export { backoffDelay, DEFAULT_RETRY, parseRetryAfter, type RetryPolicy } from "./backoff.js";
export { createClient, type PostsClient } from "./create-client.js";
export { EventFeed, Events, type FollowOptions, type PostEvent } from "./events.js";
export type { paths } from "./generated/openapi.js";
export { type CreateOptions, PostListing, Posts } from "./posts.js";
export type { ClientError, ClientErrorKind, Failure, FieldError, Result } from "./result.js";
export type { CallOptions, ClientOptions } from "./transport.js";
export type {
  Created,
  Credentials,
  Deleted,
  ListQuery,
  Login,
  NewPost,
  Post,
  PostChanges,
  PostPage,
  User,
  Versioned,
} from "./types.js";
export { Users } from "./users.js";
