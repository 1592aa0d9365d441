import fc from "fast-check";

/** The slice of a JSON Schema the service's OpenAPI document uses for parameters and bodies. */
export interface Schema {
  readonly $ref?: string;
  readonly type?: string;
  readonly format?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly required?: readonly string[];
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly anyOf?: readonly Schema[];
}

/** The slice of an OpenAPI 3.1 document read here. */
export interface OpenApiDocument {
  readonly paths: Readonly<Record<string, Readonly<Record<string, OpenApiOperation>>>>;
  readonly components: { readonly schemas: Readonly<Record<string, Schema>> };
}

interface OpenApiOperation {
  readonly parameters?: readonly {
    readonly in: "path" | "query" | "header";
    readonly name: string;
    readonly schema: Schema;
  }[];
  readonly requestBody?: { readonly content: Readonly<Record<string, { readonly schema: Schema }>> };
  readonly security?: readonly unknown[];
}

/** One request as it goes on the wire: `headers` in order, names as written. */
export interface HostileRequest {
  readonly method: string;
  /** Path and query string, already encoded (or deliberately not). */
  readonly target: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Buffer | undefined;
}

/** Values for the headers the document names only as strings, or not at all. */
export interface HeaderValues {
  /** `X-AUTH-TOKEN` values: hostile ones (malformed, alg none, expired…) and, where allowed, a valid one. */
  readonly tokens: fc.Arbitrary<string | undefined>;
  /** Entity tags that may match a seeded post. */
  readonly entityTags: readonly string[];
  /** Ids of seeded posts, so that generated requests also reach existing rows. */
  readonly postIds: readonly number[];
}

/** The request line, query, headers and body of every operation of `document`, each generated. */
export function requestsFrom(
  document: OpenApiDocument,
  values: (operation: { method: string; path: string }) => HeaderValues,
): fc.Arbitrary<HostileRequest> {
  const requests: fc.Arbitrary<HostileRequest>[] = [];
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      requests.push(requestOf(document, method.toUpperCase(), path, operation, values({ method, path })));
    }
  }
  return fc.oneof(...requests);
}

function requestOf(
  document: OpenApiDocument,
  method: string,
  path: string,
  operation: OpenApiOperation,
  values: HeaderValues,
): fc.Arbitrary<HostileRequest> {
  const parameters = operation.parameters ?? [];
  const pathParts = fc.record(
    Object.fromEntries(
      parameters
        .filter((parameter) => parameter.in === "path")
        .map((parameter) => [parameter.name, pathValue(resolve(document, parameter.schema), values.postIds)]),
    ),
  );
  const query = fc
    .tuple(
      ...parameters
        .filter((parameter) => parameter.in === "query")
        .map((parameter) =>
          fc.option(
            fc.tuple(
              fc.constant(parameter.name),
              textValue(resolve(document, parameter.schema)),
              // A parameter given twice: which one counts must not matter to the answer's class.
              fc.boolean(),
            ),
            { nil: undefined },
          ),
        ),
    )
    .map((pairs) =>
      pairs
        .flatMap((pair) => (pair === undefined ? [] : pair[2] ? [pair, pair] : [pair]))
        .map(([name, value]) => `${name}=${value}`)
        .join("&"),
    );
  const documentedHeaders = fc
    .tuple(
      ...parameters
        .filter((parameter) => parameter.in === "header")
        .map((parameter) =>
          fc.option(
            fc.tuple(
              fc.constant(parameter.name),
              headerValue(parameter.name, resolve(document, parameter.schema), values),
            ),
            { nil: undefined },
          ),
        ),
    )
    .map((pairs) => pairs.filter((pair) => pair !== undefined));
  const bodySchema = operation.requestBody?.content["application/json"]?.schema;
  const body = bodySchema === undefined ? fc.constant(undefined) : bodyBytes(resolve(document, bodySchema));
  return fc
    .record({
      pathParts,
      query,
      documentedHeaders,
      token: values.tokens,
      common: commonHeaders(bodySchema !== undefined),
      body,
    })
    .map(({ pathParts: parts, query: search, documentedHeaders: own, token, common, body: bytes }) => {
      const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => parts[name] ?? "");
      const headers: [string, string][] = [...own, ...common];
      if (token !== undefined) headers.push(["X-AUTH-TOKEN", token]);
      if (bytes !== undefined) headers.push(["Content-Length", String(bytes.length)]);
      headers.push(["Connection", "close"]);
      return { method, target: search === "" ? filled : `${filled}?${search}`, headers, body: bytes };
    });
}

function resolve(document: OpenApiDocument, schema: Schema): Schema {
  if (schema.$ref === undefined) return schema;
  const name = schema.$ref.replace("#/components/schemas/", "");
  const target = document.components.schemas[name];
  if (target === undefined) throw new Error(`unresolved ${schema.$ref}`);
  return resolve(document, target);
}

/** Text that breaks the rules of any parameter: types, ranges, encodings, lengths. */
const HOSTILE_TEXT = fc.oneof(
  fc.constantFrom(
    "",
    "-1",
    "0",
    "1.5",
    "1e3",
    "0x10",
    "+7",
    "%201",
    "NaN",
    "Infinity",
    "true",
    "null",
    "[]",
    "{}",
    "9223372036854775807",
    "9223372036854775808",
    "99999999999999999999999999999",
    "-9223372036854775809",
    "%00",
    "1%00",
    "%ZZ",
    "%",
    "%ED%A0%80",
    "%FF%FE",
    "%F0%9F%98%80",
    "%EC%95%88%EB%85%95",
    "..%2F..%2Fetc%2Fpasswd",
    "1;DROP TABLE posts",
    "'%20OR%201=1--",
    "a".repeat(5000),
    "9".repeat(2000),
  ),
  fc.string({ unit: "grapheme", maxLength: 40 }).map(encodeURIComponent),
  fc.string({ unit: "grapheme-ascii", maxLength: 40 }).map(encodeURIComponent),
);

/** A value the schema allows, as the text of a query or path parameter. */
function validText(schema: Schema): fc.Arbitrary<string> {
  if (schema.type === "integer") {
    return fc
      .integer({ min: schema.minimum ?? -(2 ** 31), max: Math.min(schema.maximum ?? 2 ** 31, 2 ** 31) })
      .map(String);
  }
  return fc
    .string({
      unit: "grapheme",
      minLength: schema.minLength ?? 0,
      maxLength: Math.min(schema.maxLength ?? 60, 60),
    })
    .map(encodeURIComponent);
}

function textValue(schema: Schema): fc.Arbitrary<string> {
  return fc.oneof(validText(schema), HOSTILE_TEXT);
}

function pathValue(schema: Schema, ids: readonly number[]): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(...ids.map(String)),
    validText(schema),
    HOSTILE_TEXT.filter((text) => text !== ""),
  );
}

/** Header values: what a header can carry on the wire without ending the line (no CR, LF). */
const HEADER_TEXT = fc.oneof(
  fc.string({ unit: "grapheme-ascii", maxLength: 60 }).map((text) => text.replace(/[\r\n]/g, "")),
  fc.constantFrom("", " ", "\t", "x".repeat(8000), "é", "안녕", "\u0000", "a\u0000b", "\u00ff\u00fe"),
);

function headerValue(name: string, schema: Schema, values: HeaderValues): fc.Arbitrary<string> {
  switch (name.toLowerCase()) {
    case "idempotency-key":
      return fc.oneof(fc.stringMatching(/^[\x21-\x7e]{1,64}$/), HEADER_TEXT, fc.constant("k".repeat(256)));
    case "if-match":
    case "if-none-match":
      return fc.oneof(
        fc.constantFrom("*", '"0"', 'W/"1"', '"unterminated', "W/", '"a", "b"', ...values.entityTags),
        HEADER_TEXT,
      );
    case "accept":
      return fc.oneof(
        fc.constantFrom(
          "*/*",
          "application/json",
          "text/html",
          "application/xml",
          "text/event-stream",
          "text/event-stream;q=0, application/json",
          "application/json;q=0.1, text/event-stream;q=0.9",
          "text/*",
          ";;;",
        ),
        HEADER_TEXT,
      );
    case "last-event-id":
      return textValue(schema);
    default:
      return HEADER_TEXT;
  }
}

/** Headers every request may carry whatever the operation: media types, encodings, Host. */
function commonHeaders(hasBody: boolean): fc.Arbitrary<[string, string][]> {
  const contentType = fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "application/json; charset=UTF-8",
    "application/json; charset=latin1",
    "application/json; charset=utf-16",
    "application/json;;",
    "application/merge-patch+json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "",
  );
  const optional = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });
  return fc
    .record({
      contentType: hasBody
        ? fc.oneof(
            { arbitrary: fc.constant("application/json"), weight: 3 },
            { arbitrary: contentType, weight: 2 },
          )
        : optional(contentType),
      contentEncoding: optional(fc.constantFrom("gzip", "br", "deflate", "identity", "x-unknown")),
      host: optional(
        fc.constantFrom("localhost", "evil.example", "127.0.0.1:99999", "[::1", "a b", "", "h".repeat(300)),
      ),
    })
    .map(({ contentType: type, contentEncoding, host }) => [
      ...(type === undefined ? [] : [["Content-Type", type] as [string, string]]),
      ...(contentEncoding === undefined ? [] : [["Content-Encoding", contentEncoding] as [string, string]]),
      ...(host === undefined ? [] : [["Host", host] as [string, string]]),
    ]);
}

/** A JSON value the schema allows. */
function validJson(schema: Schema): fc.Arbitrary<unknown> {
  if (schema.anyOf !== undefined) return fc.oneof(...schema.anyOf.map(validJson));
  switch (schema.type) {
    case "null":
      return fc.constant(null);
    case "integer":
      return fc.integer({ min: schema.minimum ?? -(2 ** 31), max: schema.maximum ?? 2 ** 31 });
    case "string":
      if (schema.format === "email")
        return fc.emailAddress().filter((email) => email.length <= (schema.maxLength ?? 255));
      return fc.string({
        unit: "grapheme",
        minLength: schema.minLength ?? 0,
        maxLength: Math.min(schema.maxLength ?? 80, 80),
      });
    case "object": {
      const properties = schema.properties ?? {};
      return fc.record(
        Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, jsonValue(property)])),
        { requiredKeys: [...(schema.required ?? [])] },
      );
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** A value that breaks the schema: wrong type, out of range, blank, NUL, lone surrogates, too long. */
function invalidJson(schema: Schema): fc.Arbitrary<unknown> {
  const wrongType = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.constant([]),
    fc.constant({}),
    fc.integer(),
  );
  if (schema.type !== "string" && schema.anyOf === undefined) return wrongType;
  const length = schema.maxLength ?? 255;
  return fc.oneof(
    wrongType,
    fc.constantFrom(
      "",
      "   ",
      "\u3000",
      "\u0000",
      "a\u0000b",
      "\ud800",
      "a\udfffb",
      "x".repeat(length + 1),
      "😀".repeat(length),
      "not an email",
      "short",
    ),
  );
}

function jsonValue(schema: Schema): fc.Arbitrary<unknown> {
  return fc.oneof({ arbitrary: validJson(schema), weight: 2 }, { arbitrary: invalidJson(schema), weight: 1 });
}

/**
 * A body for `schema`: mostly a JSON object whose properties are each valid or not, else text no
 * schema allows: other JSON values, prototype keys, deep nesting, broken JSON, invalid UTF-8, and,
 * rarely, a string near 64 KiB.
 */
function bodyBytes(schema: Schema): fc.Arbitrary<Buffer> {
  const objects = fc
    .tuple(
      validJson(schema),
      fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }),
    )
    .map(([value, extra]) =>
      JSON.stringify(typeof value === "object" && value !== null ? { ...extra, ...value } : value),
    );
  const mixed = fc
    .record(
      Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([name, property]) => [name, jsonValue(property)]),
      ),
      { requiredKeys: [] },
    )
    .map((value) => JSON.stringify(value));
  const texts = fc.constantFrom(
    "",
    "null",
    "[]",
    "0",
    '"text"',
    "{",
    '{"title":',
    '{"title":"a","title":"b","content":"c"}',
    '{"__proto__":{"admin":true},"title":"proto","content":"proto"}',
    '{"constructor":{"prototype":{"polluted":true}},"title":"c","content":"c"}',
    '{"title":"a","content":"b","__proto__":null}',
    "[".repeat(20_000),
    `${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}`,
    `{"title":"${"t".repeat(60 * 1024)}","content":"near the limit"}`,
    `{"content":"${"c".repeat(70 * 1024)}"}`,
    '{"title":1e999999,"content":-0}',
    '{"email":"a@b.c","password":"\\ud800\\udc00\\ud800passwd"}',
  );
  return fc.oneof(
    { arbitrary: objects.map((text) => Buffer.from(text)), weight: 3 },
    { arbitrary: mixed.map((text) => Buffer.from(text)), weight: 3 },
    { arbitrary: texts.map((text) => Buffer.from(text)), weight: 2 },
    {
      arbitrary: fc
        .uint8Array({ maxLength: 64 })
        .map((bytes) => Buffer.concat([Buffer.from('{"title":"'), bytes, Buffer.from('"}')])),
      weight: 1,
    },
  );
}
