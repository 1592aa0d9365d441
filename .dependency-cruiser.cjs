/**
 * The architecture as a check (STYLE.md): data flows one way, domain ← adapters ← app.
 * Runs in `pnpm test` through `pnpm lint`.
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: "domain-is-pure",
      comment: "The domain imports nothing outside itself: no other package, no library, no Node built-in.",
      severity: "error",
      from: { path: "^packages/domain/src/", pathNot: "^packages/domain/src/testing/" },
      to: { pathNot: "^packages/domain/src/" },
    },
    {
      name: "domain-testing-stays-small",
      comment: "The domain's testing kit may use the domain and vitest, nothing else.",
      severity: "error",
      from: { path: "^packages/domain/src/testing/" },
      to: { pathNot: ["^packages/domain/src/", "vitest"] },
    },
    {
      name: "domain-testing-kit-needs-no-vitest",
      comment:
        "@posts/domain/testing (fakes, builders, clock) must load where vitest is not installed; " +
        "the contract suites, which need it, are @posts/domain/testing/vitest.",
      severity: "error",
      from: { path: "^packages/domain/src/testing/index\\.ts$" },
      to: { path: "node_modules/vitest/", reachable: true },
    },
    {
      name: "adapters-do-not-know-each-other",
      comment: "An adapter depends on the domain only; the app composes them.",
      severity: "error",
      from: { path: "^packages/(adapters-[^/]+)/" },
      to: { path: "^packages/(adapters-[^/]+|app)/", pathNot: "^packages/$1/" },
    },
    {
      name: "production-code-never-imports-testing",
      comment: "Testing kits (fakes, contract suites, harnesses) are for tests only.",
      severity: "error",
      from: { path: "^packages/[^/]+/src/", pathNot: "^packages/[^/]+/src/testing/" },
      to: { path: "^packages/[^/]+/src/testing/" },
    },
    {
      name: "testcontainers-only-in-tests",
      comment:
        "testcontainers starts containers for tests: only the testing entry points load it (an optional peer), never the service at run time.",
      severity: "error",
      from: { path: "^packages/[^/]+/src/", pathNot: "^packages/[^/]+/src/testing/" },
      to: { path: "node_modules/(testcontainers|@testcontainers/)" },
    },
    {
      name: "conformance-speaks-only-http",
      comment:
        "The conformance suite is a black box: it reaches the service over HTTP only and imports no package of ours.",
      severity: "error",
      from: { path: "^packages/conformance/" },
      to: { path: "^(packages|bench)/", pathNot: "^packages/conformance/" },
    },
    {
      name: "everything-resolves",
      comment:
        "An import that does not resolve would slip past every rule above (e.g. an undeclared package).",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: "opentelemetry-stays-in-tracing",
      comment:
        "Only packages/app/src/tracing/ imports OpenTelemetry; the domain and the adapters know nothing of it.",
      severity: "error",
      from: { path: "^packages/[^/]+/src/", pathNot: "^packages/app/src/tracing/" },
      to: { path: "node_modules/(@opentelemetry|@fastify/otel)/" },
    },
    {
      name: "tracing-loads-only-when-on",
      comment:
        "The tracing set-up is imported dynamically, once traces are on: with them off, OpenTelemetry is never loaded.",
      severity: "error",
      from: { path: "^packages/app/src/", pathNot: "^packages/app/src/tracing/" },
      to: {
        path: "^packages/app/src/tracing/(start-tracing|use-case-spans)\\.ts$",
        dependencyTypesNot: ["dynamic-import", "type-only"],
      },
    },
    {
      name: "client-stands-alone",
      comment:
        "@posts/client speaks HTTP only: its sources import nothing of ours and no library, only Node's globals and built-ins' types.",
      severity: "error",
      from: { path: "^packages/client/src/" },
      to: { pathNot: "^packages/client/src/" },
    },
    {
      name: "no-circular",
      severity: "error",
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Only our own build output: a library resolved in node_modules (vitest/dist/…) must stay visible to the rules.
    // And the program checked against the client generated at test time, which a fresh clone lacks.
    exclude: { path: "^packages/[^/]+/dist/|^packages/app/test/openapi/(generated/|client-flow\\.ts$)" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.base.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["@posts/source", "import", "require", "node", "default", "types"],
      extensions: [".ts", ".js", ".json"],
      mainFields: ["module", "main", "types"],
    },
  },
};
