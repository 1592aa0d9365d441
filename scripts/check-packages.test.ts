/**
 * The libraries as their users get them. Packs @posts/domain, @posts/adapters-postgres,
 * @posts/adapters-http and @posts/client with `pnpm pack` (which builds them, applies `publishConfig` and rewrites
 * `workspace:` ranges), copies every example of `examples/` into a temporary directory outside
 * this workspace, installs each one there with plain npm (our packages from the tarballs, the rest
 * from the registry), type-checks it against the installed declarations and runs it.
 *
 * It also holds each example to under 100 lines of its own code, so that an example stays
 * something one reads in a sitting.
 *
 * `pnpm check:packages` runs this file alone; `pnpm test` runs it with every other test.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, lstat, mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const LIBRARIES = ["domain", "adapters-postgres", "adapters-http", "client"] as const;
const EXAMPLES = [
  "embed-domain",
  "embedded-postgres",
  "contract-tests",
  "http-api",
  "client",
  "jetstream-consumer",
] as const;
type Example = (typeof EXAMPLES)[number];

/** An example's own code stays below this many lines, counted by {@link ownCodeLines}. */
const OWN_CODE_LIMIT = 100;
// What `grep -cvE '^\s*($|//|\*|/\*)'` leaves out: blank lines and lines that open with a comment.
const BLANK_OR_COMMENT = /^\s*($|\/\/|\*|\/\*)/;

// The pnpm running this test (`pnpm test`, also as `npx pnpm@… test`, where no pnpm is on PATH);
// the one on PATH otherwise.
const PNPM_CLI = process.env.npm_execpath;
const PNPM: readonly string[] =
  PNPM_CLI !== undefined && basename(PNPM_CLI).startsWith("pnpm") ? [process.execPath, PNPM_CLI] : ["pnpm"];

/** How a command ended, with its stdout and stderr interleaved. */
interface Outcome {
  readonly command: string;
  readonly code: number | null;
  readonly output: string;
}

/**
 * The environment of every command: ours, minus what pnpm and vitest add for their own children
 * (`npm_config_*` from this workspace's .npmrc would change how npm installs, `VITEST*` how the
 * example's own vitest runs).
 */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...extra, NO_COLOR: "1" };
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|VITEST|VITE_|NODE_OPTIONS$|NODE_ENV$|TEST$|FORCE_COLOR$)/i.test(key)) continue;
    env[key] ??= value;
  }
  return env;
}

function run(
  command: string,
  args: readonly string[],
  cwd: string,
  timeoutMs = 120_000,
  env: Record<string, string> = {},
): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env: cleanEnv(env), stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (error) => (output += String(error)));
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ command: `${command} ${args.join(" ")} (in ${cwd})`, code, output });
    });
  });
}

/** Fails with the command's output, which is what one needs to see when it did not succeed. */
function expectSuccess(outcome: Outcome | undefined): void {
  expect(outcome, "the command never ran: see the failure of an earlier step").toBeDefined();
  if (outcome?.code !== 0)
    expect.fail(`${outcome?.command}: exit ${outcome?.code}\n${outcome?.output.slice(-6000)}`);
}

/** A Node process in an example's directory, started for the test and stopped by it. */
interface Started {
  readonly url: string;
  output(): string;
  /** SIGTERM, then the exit code (`null` after a SIGKILL, 10 s later). */
  stop(): Promise<number | null>;
}

/** Starts `node <script>` with `env` and waits until it prints the URL it listens on. */
async function start(cwd: string, script: string, env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [script], {
    cwd,
    env: cleanEnv({ ...env, PORT: "0" }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no URL printed in 60 s:\n${output}`));
    }, 60_000);
    child.stdout.on("data", (chunk) => {
      output += chunk;
      const found = /https?:\/\/127\.0\.0\.1:\d+/.exec(output)?.[0];
      if (found === undefined) return;
      clearTimeout(timer);
      resolve(found);
    });
    void exited.then((code) => reject(new Error(`exited with ${code} before listening:\n${output}`)));
  });
  return {
    url,
    output: () => output,
    stop: async () => {
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const code = await exited;
      clearTimeout(killer);
      return code;
    },
  };
}

/** One JSON request; answers the status and the parsed body. */
async function call(url: string, method: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) };
}

/**
 * The lines of code of each .ts file under `dir`, by path relative to it: every line but blank
 * ones and those that open with a comment. What npm installs and tsc builds there is not counted.
 */
async function ownCodeLines(dir: string, root = dir): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && !["node_modules", "dist"].includes(entry.name)) {
      Object.assign(counts, await ownCodeLines(path, root));
    } else if (entry.isFile() && entry.name.endsWith(".ts")) {
      const lines = (await readFile(path, "utf8")).split("\n");
      counts[relative(root, path)] = lines.filter((line) => !BLANK_OR_COMMENT.test(line)).length;
    }
  }
  return counts;
}

let work = "";
const installed = new Map<Example, Outcome>();
const builds = new Map<Example, Outcome>();
const packed: Array<{ name: string; manifest: Record<string, unknown>; files: string[] }> = [];

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "posts-packages-"));
  const tarballs = join(work, "packed");
  await mkdir(tarballs);
  // One at a time: each prepack builds the domain too, and two builds must not write it at once.
  for (const library of LIBRARIES) {
    const [command = "pnpm", ...args] = PNPM;
    const pack = await run(
      command,
      [...args, "pack", "--pack-destination", tarballs],
      join(ROOT, "packages", library),
    );
    expectSuccess(pack);
  }
  for (const tarball of await readdir(tarballs)) {
    const listing = await run("tar", ["-tzf", tarball], tarballs);
    const manifest = await run("tar", ["-xzOf", tarball, "package/package.json"], tarballs);
    expectSuccess(listing);
    expectSuccess(manifest);
    packed.push({
      name: tarball,
      manifest: JSON.parse(manifest.output),
      files: listing.output.split("\n").filter(Boolean),
    });
  }
  // Installs and type-checks run side by side: mostly waiting for the registry and for tsc.
  await Promise.all(
    EXAMPLES.map(async (example) => {
      const dir = join(work, example);
      await cp(join(ROOT, "examples", example), dir, {
        recursive: true,
        filter: (source) => !["node_modules", "dist", "package-lock.json"].includes(basename(source)),
      });
      // No install scripts: none of these packages needs one, and testcontainers' optional ssh2
      // would try to compile a native module.
      const install = await run(
        "npm",
        ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"],
        dir,
      );
      installed.set(example, install);
      if (install.code === 0) builds.set(example, await run("npm", ["run", "build"], dir));
    }),
  );
}, 300_000);

afterAll(async () => {
  if (work !== "") await rm(work, { recursive: true, force: true });
});

const manifestOf = (name: string) => packed.find((entry) => entry.manifest.name === name);

describe("the packed libraries", () => {
  it("are four tarballs whose package.json npm and TypeScript can use outside this workspace", () => {
    expect(packed.map((entry) => entry.manifest.name).sort()).toEqual(
      LIBRARIES.map((library) => `@posts/${library}`).sort(),
    );
    for (const { name, manifest, files } of packed) {
      expect(manifest.private, name).toBeUndefined();
      expect(manifest.version, name).toMatch(/^\d+\.\d+\.\d+$/);
      expect(manifest.license, name).toBe("MIT");
      expect(manifest.engines, name).toEqual({ node: expect.any(String) });
      expect(JSON.stringify(manifest), `${name}: a condition or range only this workspace knows`).not.toMatch(
        /@posts\/source|workspace:|\.\/src\//,
      );
      for (const [entry, target] of Object.entries(
        manifest.exports as Record<string, Record<string, string>>,
      )) {
        expect(Object.keys(target), `${name} ${entry}`).toEqual(["types", "default"]);
        expect(files, `${name} ${entry}`).toContain(`package/${target.types?.slice(2)}`);
        expect(files, `${name} ${entry}`).toContain(`package/${target.default?.slice(2)}`);
      }
      expect(files, name).toContain("package/README.md");
      expect(
        files.filter((file) => !/^package\/(dist\/.+\.(js|d\.ts)|package\.json|README\.md)$/.test(file)),
        `${name}: only the build, the manifest and the README`,
      ).toEqual([]);
    }
  });

  it("@posts/domain has no runtime dependency, and vitest only as an optional peer for its contract suites", () => {
    const domain = manifestOf("@posts/domain")?.manifest;
    expect(domain?.dependencies ?? {}).toEqual({});
    expect(domain?.peerDependencies).toEqual({ vitest: expect.any(String) });
    expect(domain?.peerDependenciesMeta).toEqual({ vitest: { optional: true } });
    expect(Object.keys(domain?.exports as object)).toEqual([".", "./testing", "./testing/vitest"]);
  });

  it("@posts/client has no dependency at all: fetch is global", () => {
    const client = manifestOf("@posts/client")?.manifest;
    expect(client?.dependencies ?? {}).toEqual({});
    expect(client?.peerDependencies).toBeUndefined();
    expect(Object.keys(client?.exports as object)).toEqual(["."]);
  });

  it("@posts/adapters-postgres exports ./testing, with testcontainers as optional peers only", () => {
    const adapter = manifestOf("@posts/adapters-postgres")?.manifest;
    expect(Object.keys(adapter?.exports as object)).toEqual([".", "./testing"]);
    expect(Object.keys(adapter?.dependencies as object)).not.toContain("testcontainers");
    expect(adapter?.peerDependencies).toEqual({
      "@testcontainers/postgresql": expect.any(String),
      testcontainers: expect.any(String),
    });
    expect(adapter?.peerDependenciesMeta).toEqual({
      "@testcontainers/postgresql": { optional: true },
      testcontainers: { optional: true },
    });
  });
});

describe.each(EXAMPLES)("examples/%s", (example) => {
  it("installs with npm: our packages from the tarballs, copied, not linked to this workspace", async () => {
    expectSuccess(installed.get(example));
    const scope = join(work, example, "node_modules", "@posts");
    const ours = await readdir(scope);
    expect(ours.length).toBeGreaterThan(0);
    for (const name of ours) {
      const installedPackage = join(scope, name);
      expect((await lstat(installedPackage)).isSymbolicLink(), name).toBe(false);
      expect(
        JSON.parse(await readFile(join(installedPackage, "package.json"), "utf8")).exports["."],
        name,
      ).not.toHaveProperty("@posts/source");
    }
  });

  it("type-checks against the installed declarations (tsc, skipLibCheck off)", () => {
    expectSuccess(builds.get(example));
  });

  it(`is under ${OWN_CODE_LIMIT} lines of its own code, comments and blank lines aside`, async () => {
    const counts = await ownCodeLines(join(ROOT, "examples", example));
    const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
    expect(total, "no .ts file found").toBeGreaterThan(0);
    expect(total, `lines of code per file: ${JSON.stringify(counts)}`).toBeLessThan(OWN_CODE_LIMIT);
  });
});

// An example missing from EXAMPLES would be neither run nor held to the limit above.
describe("examples/", () => {
  it("holds no example this file leaves unchecked", async () => {
    const found: string[] = [];
    for (const entry of await readdir(join(ROOT, "examples"), { withFileTypes: true })) {
      if (entry.isDirectory() && existsSync(join(ROOT, "examples", entry.name, "package.json")))
        found.push(entry.name);
    }
    expect(found.sort()).toEqual([...EXAMPLES].sort());
  });
});

describe("examples/embed-domain", () => {
  it("serves the domain's use cases over its own store, with the ordered checks in force", async () => {
    expectSuccess(builds.get("embed-domain"));
    const server = await start(join(work, "embed-domain"), "dist/server.js", {});
    try {
      const alice = { "x-user-id": "1" };
      const bob = { "x-user-id": "2" };
      const created = await call(`${server.url}/posts`, "POST", alice, { title: "Hello", content: "First" });
      expect(created).toMatchObject({ status: 201, body: { title: "Hello", author: { id: 1 } } });
      const post = `${server.url}/posts/${created.body.id}`;

      // Someone else's post: refused, but an empty or invalid patch is refused for that first.
      expect(await call(post, "PATCH", bob, { title: "Mine now" })).toMatchObject({
        status: 403,
        body: { kind: "not-post-author", action: "modify" },
      });
      expect(await call(post, "PATCH", bob, {})).toMatchObject({
        status: 400,
        body: { kind: "empty-patch" },
      });
      expect(await call(post, "PATCH", bob, { title: "" })).toMatchObject({
        status: 400,
        body: { kind: "validation", errors: [{ field: "title" }] },
      });
      expect(await call(`${server.url}/posts/999`, "PATCH", alice, { title: "x" })).toMatchObject({
        status: 404,
        body: { kind: "post-not-found" },
      });
      expect(await call(post, "PATCH", alice, { title: "Hello again" })).toMatchObject({
        status: 200,
        body: { title: "Hello again", content: "First" },
      });
    } finally {
      await server.stop();
    }
  });

  it("imports the in-memory testing kit of @posts/domain where vitest is not installed", async () => {
    const dir = join(work, "embed-domain");
    await expect(lstat(join(dir, "node_modules", "vitest"))).rejects.toThrow();
    const kit = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const kit = await import("@posts/domain/testing");
         const db = new kit.InMemoryDatabase();
         const user = await kit.aUser(db.users);
         console.log("kit ok", user.id, new kit.ManualClock().now().toISOString());`,
      ],
      dir,
    );
    expectSuccess(kit);
    expect(kit.output).toContain("kit ok 1 2026-11-22T10:15:30.123Z");
    // The contract suites are the part that needs vitest, and say so.
    const suites = await run(
      process.execPath,
      ["--input-type=module", "-e", 'await import("@posts/domain/testing/vitest")'],
      dir,
    );
    expect(suites.code).not.toBe(0);
    expect(suites.output).toContain("Cannot find package 'vitest'");
  });
});

describe("examples/embedded-postgres", () => {
  it("migrates, creates, pages and patches posts on PGlite, and says every check held", async () => {
    expectSuccess(builds.get("embedded-postgres"));
    const outcome = await run("npm", ["start"], join(work, "embedded-postgres"));
    expectSuccess(outcome);
    expect(outcome.output).toMatch(/migrated .*0001_create_users/);
    expect(outcome.output).toContain("next cursor null");
    expect(outcome.output).not.toContain("FAIL");
    expect(outcome.output.match(/^ok {3}/gm)?.length).toBeGreaterThanOrEqual(5);
  });

  it("imports @posts/adapters-postgres/testing without testcontainers, which only a container needs", async () => {
    const dir = join(work, "embedded-postgres");
    await expect(lstat(join(dir, "node_modules", "testcontainers"))).rejects.toThrow();
    const outcome = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const testing = await import("@posts/adapters-postgres/testing");
         console.log("runtime answers:", await testing.containerRuntimeAnswers());
         await testing.acquirePostgresContainer().catch((error) => console.log("refused:", error.message));`,
      ],
      dir,
    );
    expectSuccess(outcome);
    expect(outcome.output).toContain("runtime answers: false");
    expect(outcome.output).toMatch(/refused: Cannot find package '@testcontainers\/postgresql'/);
  });
});

describe("examples/contract-tests", () => {
  it("holds its own adapters to the contract suites with the example's vitest", async () => {
    expectSuccess(builds.get("contract-tests"));
    const outcome = await run("npm", ["test"], join(work, "contract-tests"));
    expectSuccess(outcome);
    expect(Number(/Tests\s+(\d+) passed/.exec(outcome.output)?.[1])).toBeGreaterThan(0);
    // Without a container runtime its PostgreSQL suite is skipped, and the run says so; the CI's
    // containers stage runs it on a container.
    if (/skipped/.test(outcome.output))
      expect(outcome.output).toContain("SKIPPING the PostgreSQL container suite");
  });
});

describe("examples/client", () => {
  it("signs up, creates, edits with If-Match, is refused a stale edit as a value and walks the pages of the http-api example", async () => {
    expectSuccess(builds.get("client"));
    expectSuccess(builds.get("http-api"));
    const dataDir = await mkdtemp(join(work, "client-data-"));
    const server = await start(join(work, "http-api"), "dist/server.js", { DATA_DIR: dataDir });
    try {
      const outcome = await run("npm", ["start"], join(work, "client"), 120_000, { POSTS_URL: server.url });
      expectSuccess(outcome);
      expect(outcome.output).not.toContain("FAIL");
      expect(outcome.output).toContain("a stale edit was refused: precondition-failed");
      expect(outcome.output).toContain("listed 3 posts, newest first: third, edited, second, first");
      expect(outcome.output.match(/^ok {3}/gm)?.length).toBe(8);
    } finally {
      expect(await server.stop(), server.output()).toBe(0);
    }
  });
});

describe("examples/http-api", () => {
  it("serves the posts API from the three packages: register, log in, create, list, then stops on SIGTERM", async () => {
    expectSuccess(builds.get("http-api"));
    const dataDir = await mkdtemp(join(work, "http-api-data-"));
    const server = await start(join(work, "http-api"), "dist/server.js", { DATA_DIR: dataDir });
    try {
      const api = `${server.url}/api/v1`;
      const credentials = { email: "writer@example.com", password: "correct horse" };
      expect((await call(`${api}/user`, "POST", {}, credentials)).status).toBe(201);
      const login = await call(`${api}/user/login`, "POST", {}, credentials);
      expect(login).toMatchObject({ status: 200, body: { token: expect.any(String) } });
      const created = await call(
        `${api}/posts`,
        "POST",
        { "x-auth-token": login.body.token },
        { title: "t", content: "c" },
      );
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(await call(`${api}/posts?size=5`, "GET", {})).toMatchObject({
        status: 200,
        body: {
          content: [{ title: "t", content: "c", user: { email: credentials.email } }],
          nextCursor: null,
        },
      });
    } finally {
      expect(await server.stop(), server.output()).toBe(0);
    }
  });
});
