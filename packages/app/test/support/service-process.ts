import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

/**
 * The real entry point on its TypeScript sources: no build step, so the test always runs the
 * code it sits next to. tsx resolves from the repository root, where it is installed.
 */
const MAIN = ["--conditions=@posts/source", "--import", "tsx", "packages/app/src/main.ts"];

/** A 32-byte key for the tests that pass JWT_SECRET. */
export const TEST_JWT_SECRET = "e2e-secret-e2e-secret-e2e-secret";

/** One parsed pino line. */
export type LogLine = Record<string, unknown> & { readonly msg?: string; readonly level?: number };

/** How a child process ended, and when (`performance.now()`). */
export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly at: number;
}

/** A running `main.ts`, with its output collected as it comes. */
export interface ServiceProcess {
  readonly child: ChildProcess;
  /** Every JSON line written to stdout so far. */
  readonly logs: LogLine[];
  stdout(): string;
  stderr(): string;
  /** stdout and stderr, for failure messages. */
  output(): string;
  readonly exited: Promise<Exit>;
  /**
   * The first log line from index `from` on (default: the first line ever), past or future,
   * that `matches`; rejects when the process ends first or after `timeoutMs` (default 45 s).
   */
  waitForLog(
    matches: (line: LogLine) => boolean,
    options?: { timeoutMs?: number; from?: number },
  ): Promise<LogLine>;
  /** SIGKILL if it still runs, then the exit; for cleanup. */
  kill(): Promise<Exit>;
}

/** A service that has logged that it listens. */
export interface ListeningService extends ServiceProcess {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** SIGTERM, then the exit (SIGKILL after 15 s). */
  stop(): Promise<Exit>;
}

/**
 * Spawns `node main.ts <args>` with only `env` (plus PATH, HOME and TZ), so that nothing of the
 * test runner's environment leaks into the service's configuration.
 */
export function spawnService(args: readonly string[], env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, [...MAIN, ...args], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      ...(process.env.TZ === undefined ? {} : { TZ: process.env.TZ }),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let pending = "";
  const logs: LogLine[] = [];
  const watchers = new Set<() => void>();
  let closed = false;
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line) as LogLine);
      } catch {
        // Not a log line; kept in stdout().
      }
    }
    for (const watcher of watchers) watcher();
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<Exit>((resolve) => {
    // "close", not "exit": by then every byte of stdout has been read.
    child.once("close", (code, signal) => {
      closed = true;
      for (const watcher of watchers) watcher();
      resolve({ code, signal, at: performance.now() });
    });
  });

  const waitForLog = (
    matches: (line: LogLine) => boolean,
    { timeoutMs = 45_000, from = 0 }: { timeoutMs?: number; from?: number } = {},
  ) =>
    new Promise<LogLine>((resolve, reject) => {
      const timer = setTimeout(() => {
        watchers.delete(check);
        reject(new Error(`no matching log line within ${timeoutMs} ms\n${output()}`));
      }, timeoutMs);
      function check() {
        const found = logs.slice(from).find(matches);
        if (found === undefined && !closed) return;
        clearTimeout(timer);
        watchers.delete(check);
        if (found !== undefined) resolve(found);
        else reject(new Error(`the service exited before the expected log line\n${output()}`));
      }
      watchers.add(check);
      check();
    });

  const output = () => `--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`;
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    return exited;
  };
  return { child, logs, stdout: () => stdout, stderr: () => stderr, output, exited, waitForLog, kill };
}

/** Starts the service on a free port of 127.0.0.1 and waits until it listens. */
export async function startService(env: Record<string, string>): Promise<ListeningService> {
  // PORT=0: the kernel picks a free port, with no window for another process to take it.
  const service = spawnService([], { HOST: "127.0.0.1", PORT: "0", ...env });
  let port: number;
  try {
    port = Number((await service.waitForLog(isListeningLine)).port);
  } catch (error) {
    await service.kill();
    throw error;
  }
  return {
    ...service,
    url: `http://127.0.0.1:${port}`,
    port,
    stop: async () => {
      if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill("SIGTERM");
      const timer = setTimeout(() => service.child.kill("SIGKILL"), 15_000);
      const exit = await service.exited;
      clearTimeout(timer);
      return exit;
    },
  };
}

/** Runs `node main.ts <args>` to its end. */
export async function runCommand(
  args: readonly string[],
  env: Record<string, string>,
): Promise<Exit & { readonly stdout: string; readonly stderr: string; readonly logs: LogLine[] }> {
  const service = spawnService(args, env);
  const timer = setTimeout(() => service.child.kill("SIGKILL"), 60_000);
  const exit = await service.exited;
  clearTimeout(timer);
  return { ...exit, stdout: service.stdout(), stderr: service.stderr(), logs: service.logs };
}

/** The line `serve` logs once the server listens. */
export function isListeningLine(line: LogLine): boolean {
  return typeof line.port === "number" && line.msg?.includes("listening") === true;
}

/** Whether something accepts TCP connections on 127.0.0.1:`port` right now. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
