export type { ConformanceOptions, ParsedArguments } from "./parse-arguments.js";
export { parseArguments, USAGE } from "./parse-arguments.js";
export type { RunConformanceIo } from "./run-conformance.js";
export { runConformance } from "./run-conformance.js";
export type { ConformanceReport } from "./runner/run-cases.js";
export { summaryLine } from "./runner/run-cases.js";
