import { Mismatch } from "../runner/mismatch.js";

/** One answer of the deployment, read whole, with the request it answers. */
export interface Reply {
  /** `METHOD /path?query` of the request, for failure reports. */
  readonly request: string;
  readonly status: number;
  readonly headers: Headers;
  /** The body's bytes, exactly as received. */
  readonly bytes: Uint8Array;
  /** The body as UTF-8 text (invalid sequences shown as U+FFFD). */
  readonly text: string;
}

/** What one request carries besides its method and path. */
export interface RequestOptions {
  /** Sent as `X-AUTH-TOKEN` (the contract's only place for a token). */
  readonly token?: string;
  /** Serialized with `JSON.stringify` and sent as `application/json`. */
  readonly json?: unknown;
  /** A body sent as is (with `contentType`, if any); for what `json` cannot express. */
  readonly body?: string | Uint8Array | ReadableStream<Uint8Array>;
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Sends requests to one deployment with `fetch` and reads each answer whole. Never throws for
 * an HTTP status; a connection that fails before the whole answer arrived, or a timeout (60 s),
 * rejects with a {@link Mismatch} naming the request.
 */
export class ApiClient {
  readonly #origin: URL;

  /** `origin`: scheme, host and port of the deployment. */
  constructor(origin: URL) {
    this.#origin = origin;
  }

  /** The absolute URL of `pathAndQuery` (which starts with `/`) on the deployment. */
  url(pathAndQuery: string): URL {
    return new URL(pathAndQuery, this.#origin);
  }

  /** Sends one request and reads its whole answer. */
  async request(method: string, pathAndQuery: string, options: RequestOptions = {}): Promise<Reply> {
    const headers = new Headers(options.headers);
    if (options.token !== undefined) headers.set("x-auth-token", options.token);
    let body: RequestOptions["body"];
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers.set("content-type", "application/json");
    } else {
      body = options.body;
    }
    if (options.contentType !== undefined) headers.set("content-type", options.contentType);
    const request = `${method} ${pathAndQuery.length > 120 ? `${pathAndQuery.slice(0, 120)}…` : pathAndQuery}`;
    let response: Response;
    let bytes: Uint8Array;
    try {
      response = await fetch(this.url(pathAndQuery), {
        method,
        headers,
        body: body ?? null,
        redirect: "manual",
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        // Required by fetch for a streamed body (sent chunked).
        ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
      } as RequestInit);
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      const cause = (error as Error).cause;
      const reason = cause instanceof Error ? cause.message : (error as Error).message;
      throw new Mismatch(request, "an HTTP answer", `no answer: the connection failed (${reason})`);
    }
    return {
      request,
      status: response.status,
      headers: response.headers,
      bytes,
      text: new TextDecoder().decode(bytes),
    };
  }

  /** `GET` {@link ApiClient.request}. */
  get(path: string, options?: RequestOptions): Promise<Reply> {
    return this.request("GET", path, options);
  }

  /** `POST` {@link ApiClient.request}. */
  post(path: string, options?: RequestOptions): Promise<Reply> {
    return this.request("POST", path, options);
  }

  /** `PATCH` {@link ApiClient.request}. */
  patch(path: string, options?: RequestOptions): Promise<Reply> {
    return this.request("PATCH", path, options);
  }

  /** `DELETE` {@link ApiClient.request}. */
  delete(path: string, options?: RequestOptions): Promise<Reply> {
    return this.request("DELETE", path, options);
  }
}
