import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One span as an OTLP/HTTP JSON export carries it, with its resource's attributes beside it. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Empty or absent for a root span. */
  readonly parentSpanId?: string;
  readonly name: string;
  /** OTLP's numbering: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly status?: { readonly code?: number };
  readonly resource: Readonly<Record<string, unknown>>;
}

interface KeyValue {
  key: string;
  value: Record<string, unknown>;
}

/**
 * An OTLP/HTTP receiver of the test's own, for `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`: it
 * listens on a free loopback port, answers every export of `/v1/traces` with success and keeps
 * its spans. Anything else it counts as a stray request.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Requests that were not a JSON trace export. */
  readonly stray: string[] = [];
  readonly #server: Server;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    const receiver = new OtlpReceiver(server);
    server.on("request", (request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        try {
          if (request.url !== "/v1/traces" || !request.headers["content-type"]?.includes("json")) {
            throw new Error("not a JSON trace export");
          }
          receiver.#keep(JSON.parse(body));
        } catch {
          receiver.stray.push(`${request.method} ${request.url} ${request.headers["content-type"]}`);
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return receiver;
  }

  /** `http://127.0.0.1:<port>`, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  get endpoint(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** The spans of one trace received so far. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }

  #keep(exported: {
    resourceSpans?: {
      resource?: { attributes?: KeyValue[] };
      scopeSpans?: { spans?: Record<string, unknown>[] }[];
    }[];
  }) {
    for (const { resource, scopeSpans = [] } of exported.resourceSpans ?? []) {
      const resourceAttributes = attributesOf(resource?.attributes);
      for (const { spans = [] } of scopeSpans) {
        for (const span of spans) {
          this.spans.push({
            ...(span as unknown as ReceivedSpan),
            attributes: attributesOf(span.attributes as KeyValue[] | undefined),
            resource: resourceAttributes,
          });
        }
      }
    }
  }
}

function attributesOf(list: KeyValue[] = []): Record<string, unknown> {
  return Object.fromEntries(list.map(({ key, value }) => [key, Object.values(value)[0]]));
}
