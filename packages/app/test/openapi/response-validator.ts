import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/** The parts of an OpenAPI 3.1 document a response is checked against. */
export interface OpenApiDocument {
  readonly paths: Record<
    string,
    Record<string, { operationId?: string; responses: Record<string, DocumentedResponse> }>
  >;
  readonly components: { readonly schemas: Record<string, object> };
}

interface DocumentedResponse {
  readonly description: string;
  readonly headers?: Record<string, { readonly schema: object }>;
  readonly content?: Record<string, { readonly schema: object }>;
  readonly "x-empty-body"?: boolean;
}

/** One response as the wire gave it. */
export interface SeenResponse {
  readonly method: string;
  /** The path template of the document, `/api/v1/posts/{id}`. */
  readonly path: string;
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

/**
 * Headers every answer carries whatever the operation, which the document states once in its
 * description instead of in each response: message framing, and the security headers.
 */
const EVERY_ANSWER = new Set([
  "content-type",
  "content-length",
  "date",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "content-security-policy",
  "cross-origin-opener-policy",
  "cross-origin-resource-policy",
  "origin-agent-cluster",
  "referrer-policy",
  "strict-transport-security",
  "x-content-type-options",
  "x-dns-prefetch-control",
  "x-download-options",
  "x-frame-options",
  "x-permitted-cross-domain-policies",
  "x-xss-protection",
]);

/**
 * Checks responses against an OpenAPI 3.1 document: the status is declared for the operation,
 * every header outside {@link EVERY_ANSWER} is declared and matches its schema, and the body
 * has a declared media type and matches its schema, or is empty where the response declares no
 * content or `x-empty-body`. Returns the problems of one response, none when it conforms.
 *
 * Schemas are checked by Ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1); the lookups of
 * operation, status and media type are a few lines here because the libraries that do them
 * (openapi-response-validator and the like) read OpenAPI 3.0 only.
 */
export function responseValidator(document: OpenApiDocument): (response: SeenResponse) => string[] {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  // A CommonJS module: its function is also its `default` property, which is what NodeNext types see.
  addFormats.default(ajv);
  ajv.addFormat("int64", { type: "number", validate: Number.isSafeInteger });
  // The components under the document's own pointers, so each `$ref` resolves as written.
  ajv.addSchema({ $id: "openapi.json", components: document.components });
  const compiled = new Map<object, ValidateFunction>();
  const validatorOf = (schema: object) => {
    let validate = compiled.get(schema);
    if (validate === undefined) {
      validate = ajv.compile({ ...rebased(schema) });
      compiled.set(schema, validate);
    }
    return validate;
  };
  const problemsOf = (what: string, schema: object, value: unknown) => {
    const validate = validatorOf(schema);
    return validate(value) ? [] : [`${what}: ${ajv.errorsText(validate.errors)}`];
  };

  return ({ method, path, status, headers, body }) => {
    const where = `${method.toUpperCase()} ${path} → ${status}`;
    const operation = document.paths[path]?.[method.toLowerCase()];
    if (operation === undefined) return [`${where}: no such operation in the document`];
    const declared = operation.responses[String(status)];
    if (declared === undefined) return [`${where}: status not declared`];
    const problems: string[] = [];

    const declaredHeaders = new Map(
      Object.entries(declared.headers ?? {}).map(([name, header]) => [name.toLowerCase(), header]),
    );
    headers.forEach((value, name) => {
      if (EVERY_ANSWER.has(name)) return;
      const header = declaredHeaders.get(name);
      if (header === undefined) problems.push(`${where}: header ${name} not declared`);
      else {
        const typed = (header.schema as { type?: string }).type === "integer" ? Number(value) : value;
        problems.push(...problemsOf(`${where}: header ${name}`, header.schema, typed));
      }
    });

    const contentType = headers.get("content-type");
    if (body === "" && contentType === null) {
      if (declared.content !== undefined && declared["x-empty-body"] !== true) {
        problems.push(`${where}: empty body, but the response declares content`);
      }
      return problems;
    }
    const mediaType = (contentType ?? "").split(";")[0]?.trim() ?? "";
    const content = declared.content?.[mediaType];
    if (content === undefined)
      return [...problems, `${where}: media type ${mediaType || "(none)"} not declared`];
    const value = mediaType === "application/json" ? (JSON.parse(body) as unknown) : body;
    return [...problems, ...problemsOf(`${where}: body`, content.schema, value)];
  };
}

/** `schema` with its `#/components/…` references pointing into the document added as `openapi.json`. */
function rebased(schema: object): object {
  return JSON.parse(
    JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/'),
  ) as object;
}
