import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from "fastify";

const POSTS = "/api/v1/posts";

/** `X-AUTH-TOKEN: token`, or no header when `token` is undefined. */
export function tokenHeader(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { "x-auth-token": token };
}

/** The requests the posts route tests send, each one `inject` on the app. */
export interface PostRequests {
  /** Any request. */
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  /** GET `url` with `headers`. */
  get(url: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  /** POST /api/v1/posts: `payload` as JSON, with the token and `headers` (an Idempotency-Key) when given. */
  create(
    token: string | undefined,
    payload: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  /** PATCH /api/v1/posts/`id`: `payload` as JSON, with the token and If-Match when given. */
  patch(
    token: string | undefined,
    id: string | number,
    payload: unknown,
    ifMatch?: string,
  ): Promise<LightMyRequestResponse>;
  /** DELETE /api/v1/posts/`id`, with the token and If-Match when given. */
  remove(token: string | undefined, id: string | number, ifMatch?: string): Promise<LightMyRequestResponse>;
}

/**
 * The requests of {@link PostRequests} on the app `app()` answers at the time of each request, so
 * they can be made at a describe block's top, before `useTestApp` has built its app.
 */
export function postRequests(app: () => FastifyInstance): PostRequests {
  const inject = (options: InjectOptions) => app().inject(options);
  const ifMatchHeader = (ifMatch: string | undefined) =>
    ifMatch === undefined ? {} : { "if-match": ifMatch };
  return {
    inject,
    get: (url, headers = {}) => inject({ method: "GET", url, headers }),
    create: (token, payload, headers = {}) =>
      inject({
        method: "POST",
        url: POSTS,
        headers: { "content-type": "application/json", ...tokenHeader(token), ...headers },
        payload: JSON.stringify(payload),
      }),
    patch: (token, id, payload, ifMatch) =>
      inject({
        method: "PATCH",
        url: `${POSTS}/${id}`,
        headers: { "content-type": "application/json", ...tokenHeader(token), ...ifMatchHeader(ifMatch) },
        payload: JSON.stringify(payload),
      }),
    remove: (token, id, ifMatch) =>
      inject({
        method: "DELETE",
        url: `${POSTS}/${id}`,
        headers: { ...tokenHeader(token), ...ifMatchHeader(ifMatch) },
      }),
  };
}
