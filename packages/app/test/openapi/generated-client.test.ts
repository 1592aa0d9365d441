import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { TestDatabase } from "@posts/adapters-postgres/testing";
import { openTestDatabase, postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import type { Middleware } from "openapi-fetch";
import openapiTS, { astToString } from "openapi-typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ListeningService, startService, TEST_JWT_SECRET } from "../support/service-process.js";
import { type OpenApiDocument, responseValidator } from "./response-validator.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));
const HERE = fileURLToPath(new URL(".", import.meta.url));
const BIN = join(ROOT, "node_modules", ".bin");

/**
 * The flow program, imported by a computed name: it imports the generated client, which a fresh
 * clone lacks until the test below writes it, so `tsc -b` must not follow it (its own strict
 * check is part of this test).
 */
const FLOW = new URL("./client-flow.ts", import.meta.url).href;
type RunClientFlow = (baseUrl: string, middleware: Middleware) => Promise<void>;

/** What the flow saw: every problem of every response, and the operations it reached. */
interface Checked {
  readonly problems: string[];
  readonly operations: Set<string>;
  count: number;
}

/** An openapi-fetch middleware that checks every response against `document`. */
function validating(document: OpenApiDocument, checked: Checked): Middleware {
  const check = responseValidator(document);
  return {
    async onResponse({ request, response, schemaPath }) {
      const method = request.method.toLowerCase();
      const body = await response.clone().text();
      checked.problems.push(
        ...check({ method, path: schemaPath, status: response.status, headers: response.headers, body }),
      );
      checked.operations.add(document.paths[schemaPath]?.[method]?.operationId ?? `${method} ${schemaPath}`);
      checked.count += 1;
    },
  };
}

/** Runs the generated client's flow against `service`, every response checked against its document. */
async function flowAgainst(service: ListeningService): Promise<void> {
  const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as OpenApiDocument;
  const checked: Checked = { problems: [], operations: new Set(), count: 0 };
  const { runClientFlow } = (await import(FLOW)) as { runClientFlow: RunClientFlow };
  await runClientFlow(service.url, validating(document, checked));
  expect(checked.problems).toEqual([]);
  const operationIds = Object.values(document.paths).flatMap((methods) =>
    Object.values(methods).map((operation) => operation.operationId),
  );
  expect([...checked.operations].sort()).toEqual([...operationIds].sort());
  // Every call of the flow went through the check.
  expect(checked.count).toBe(27);
}

describe("the served OpenAPI document, as generators and linters use it (embedded database)", () => {
  let dataDir: string;
  let service: ListeningService | undefined;
  const url = () => {
    if (service === undefined) throw new Error("the service did not start");
    return service.url;
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "posts-openapi-"));
    service = await startService({ DATA_DIR: dataDir, JWT_SECRET: TEST_JWT_SECRET });
  });
  afterAll(async () => {
    await service?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("passes `redocly lint` (recommended rules, redocly.yaml): no error, and only the warnings redocly.yaml gives a reason for", async () => {
    // Exit code 1 on errors: the report is read either way.
    const lint = await run(
      join(BIN, "redocly"),
      ["lint", `${url()}/openapi.json`, "--config", join(ROOT, "redocly.yaml"), "--format=json"],
      {
        cwd: ROOT,
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
      },
    ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }));
    const report = JSON.parse(lint.stdout) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; severity: string; message: string }[];
    };
    expect(report.problems.filter((problem) => problem.severity === "error")).toEqual([]);
    expect(report.totals.errors).toBe(0);
    // A rule set to `warn` in redocly.yaml carries its reason in a comment above it.
    const config = await readFile(join(ROOT, "redocly.yaml"), "utf8");
    const explained = new Set(
      [...config.matchAll(/#.*\n\s+([a-z0-9-]+): warn\s*$/gm)].map((match) => match[1]),
    );
    for (const problem of report.problems) {
      expect({ rule: problem.ruleId, explained: explained.has(problem.ruleId) }).toEqual({
        rule: problem.ruleId,
        explained: true,
      });
    }
  });

  it("names operations and shared shapes, and declares ids as integers", async () => {
    const document = (await (await fetch(`${url()}/openapi.json`)).json()) as OpenApiDocument & {
      components: { schemas: object; responses: object; securitySchemes: object };
      servers: unknown[];
      paths: Record<string, Record<string, { parameters?: { in: string; schema: object }[] }>>;
    };
    const operationIds = Object.values(document.paths).flatMap((methods) =>
      Object.values(methods).map((operation) => operation.operationId),
    );
    expect(operationIds.sort()).toEqual(
      [
        "createPost",
        "listPosts",
        "getPost",
        "updatePost",
        "deletePost",
        "registerUser",
        "logIn",
        "getCurrentUser",
        "deleteCurrentUser",
        "getHealth",
        "getReadiness",
        "getMetrics",
        "listChangeEvents",
      ].sort(),
    );
    expect(Object.keys(document.components.schemas).sort()).toEqual(
      [
        "AuthError",
        "ChangeEvent",
        "ChangeEventPage",
        "Credentials",
        "ErrorEnvelope",
        "FieldError",
        "Login",
        "NewPost",
        "Post",
        "PostChanges",
        "PostPage",
        "Status",
        "Timestamp",
        "User",
      ].sort(),
    );
    expect(document.servers).toEqual([{ url: "/" }]);
    const text = JSON.stringify(document.paths);
    // Each shared shape is written once, in components: the paths only refer to it.
    expect(text).not.toContain('"timestamp"');
    expect(text.match(/#\/components\/schemas\/ErrorEnvelope/g)?.length).toBeGreaterThan(30);
    for (const operation of Object.values(document.paths["/api/v1/posts/{id}"] ?? {})) {
      expect(operation.parameters?.find((parameter) => parameter.in === "path")?.schema).toEqual({
        type: "integer",
        format: "int64",
        minimum: 1,
      });
    }
  });

  it("generates a client (openapi-typescript) that a strict program type-checks against", async () => {
    const types = astToString(await openapiTS(new URL(`${url()}/openapi.json`)));
    await mkdir(join(HERE, "generated"), { recursive: true });
    await writeFile(join(HERE, "generated", "posts-api.ts"), types);
    const tsc = await run(
      process.execPath,
      [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", join(HERE, "tsconfig.client.json")],
      { cwd: HERE },
    ).catch((error: { stdout?: string; stderr?: string }) => ({ failed: `${error.stdout}${error.stderr}` }));
    expect(tsc).not.toHaveProperty("failed");
  });

  it("the response check refuses what the document does not declare", async () => {
    const check = responseValidator((await (await fetch(`${url()}/openapi.json`)).json()) as OpenApiDocument);
    const json = (extra: Record<string, string> = {}) =>
      new Headers({ "content-type": "application/json; charset=utf-8", ...extra });
    const post =
      '{"id":1,"title":"t","content":"c","createdAt":"2026-11-24T10:00:00.000","updatedAt":"2026-11-24T10:00:00.000","user":{"id":1,"email":"a@b.c"}}';
    const seen = { method: "get", path: "/api/v1/posts/{id}", status: 200, headers: json(), body: post };
    expect(check(seen)).toEqual([]);
    expect(check({ ...seen, status: 418 })).toEqual([expect.stringContaining("status not declared")]);
    expect(check({ ...seen, headers: json({ "x-extra": "1" }) })).toEqual([
      expect.stringContaining("header x-extra not declared"),
    ]);
    expect(check({ ...seen, body: post.replace('"id":1,', '"id":"1",') })).toEqual([
      expect.stringContaining("body"),
    ]);
    expect(check({ ...seen, headers: new Headers(), body: "" })).toEqual([
      expect.stringContaining("empty body"),
    ]);
    const emptyPatch = {
      method: "patch",
      path: "/api/v1/posts/{id}",
      status: 400,
      headers: new Headers(),
      body: "",
    };
    expect(check(emptyPatch)).toEqual([]);
    expect(check({ ...emptyPatch, status: 412 })).toEqual([expect.stringContaining("empty body")]);
    expect(
      check({
        method: "post",
        path: "/api/v1/user/login",
        status: 429,
        headers: json({ "retry-after": "x" }),
        body: "{}",
      }),
    ).toEqual([expect.stringContaining("header retry-after"), expect.stringContaining("body")]);
  });

  it("runs the whole flow through openapi-fetch, every response as the document declares it", async () => {
    if (service === undefined) throw new Error("the service did not start");
    await flowAgainst(service);
  });
});

describeNeeding(
  await postgresForTests(),
  "the generated client's flow on PostgreSQL, every response as the document declares it",
  () => {
    let database: TestDatabase | undefined;
    let service: ListeningService | undefined;

    beforeAll(async () => {
      database = await openTestDatabase("postgres", { migrate: false });
      service = await startService({
        DATABASE_URL: database.connectionString ?? "",
        JWT_SECRET: TEST_JWT_SECRET,
      });
    });
    afterAll(async () => {
      await service?.stop();
      await database?.close();
    });

    it("runs the whole flow through openapi-fetch", async () => {
      if (service === undefined) throw new Error("the service did not start");
      await flowAgainst(service);
    });
  },
);
