import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { RELIABILITY_JWT_SECRET } from "./in-process-service.js";

const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));
// The real entry point on its sources, as `pnpm dev` runs it: the test runs the code beside it.
const MAIN = ["--conditions=@posts/source", "--import", "tsx", "packages/app/src/main.ts"];

/** One pino line of the service's stdout. */
export type LogLine = Record<string, unknown> & { readonly msg?: string; readonly level?: number };

/** How the process ended, and when (`performance.now()`). */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly at: number;
}

/** `main.ts` running as a child process, its output collected as it comes. */
export interface ServiceChild {
  readonly process: ChildProcess;
  readonly logs: readonly LogLine[];
  readonly exited: Promise<ChildExit>;
  /** Resolves with the first log line, past or future, that `matches`; rejects on exit or timeout. */
  waitForLog(matches: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** stdout and stderr, for failure messages. */
  output(): string;
  /** SIGKILL if it still runs; for cleanup. */
  kill(): Promise<void>;
}

/**
 * Spawns the service with exactly `env` (plus PATH, HOME and TZ): nothing of the test runner's
 * environment leaks into its configuration. JWT_SECRET defaults to the tests' key.
 */
export function spawnServiceChild(env: Record<string, string>): ServiceChild {
  const child = spawn(process.execPath, MAIN, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      ...(process.env.TZ === undefined ? {} : { TZ: process.env.TZ }),
      JWT_SECRET: RELIABILITY_JWT_SECRET,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: LogLine[] = [];
  let text = "";
  let pending = "";
  const watchers = new Set<() => void>();
  let closed = false;

  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    text += chunk;
    const lines = (pending + chunk).split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line) as LogLine);
      } catch {
        // Not JSON; kept in output().
      }
    }
    for (const watcher of watchers) watcher();
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    text += chunk;
  });
  const exited = new Promise<ChildExit>((resolve) => {
    // "close" rather than "exit": by then every byte of output has been read.
    child.once("close", (code, signal) => {
      closed = true;
      for (const watcher of watchers) watcher();
      resolve({ code, signal, at: performance.now() });
    });
  });

  const waitForLog = (matches: (line: LogLine) => boolean, timeoutMs = 30_000) =>
    new Promise<LogLine>((resolve, reject) => {
      const check = () => {
        const found = logs.find(matches);
        if (found === undefined && !closed) return;
        clearTimeout(timer);
        watchers.delete(check);
        if (found !== undefined) resolve(found);
        else reject(new Error(`the service exited before the expected log line\n${text}`));
      };
      const timer = setTimeout(() => {
        watchers.delete(check);
        reject(new Error(`no matching log line within ${timeoutMs} ms\n${text}`));
      }, timeoutMs);
      watchers.add(check);
      check();
    });

  return {
    process: child,
    logs,
    exited,
    waitForLog,
    output: () => text,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** A service child that listens; answers its base URL. */
export async function startServiceChild(
  env: Record<string, string>,
): Promise<ServiceChild & { readonly url: string; readonly port: number }> {
  // PORT=0: the kernel picks a free port, and the log line says which.
  const service = spawnServiceChild({ HOST: "127.0.0.1", PORT: "0", ...env });
  try {
    const listening = await service.waitForLog(isListeningLine, 45_000);
    const port = Number(listening.port);
    return { ...service, url: `http://127.0.0.1:${port}`, port };
  } catch (error) {
    await service.kill();
    throw error;
  }
}

/** The line `serve` logs once the server listens. */
export function isListeningLine(line: LogLine): boolean {
  return typeof line.port === "number" && line.msg?.includes("listening") === true;
}
