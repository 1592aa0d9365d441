import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

/** A server under test, running as a child process of the harness. */
export interface ServerProcess {
  /** What the report calls it. */
  readonly name: string;
  readonly url: string;
  readonly pid: number;
  /** The file that receives the process's stdout and stderr. */
  readonly logFile: string;
  /** Whether the process is still running. */
  alive(): boolean;
  stop(): Promise<void>;
}

/**
 * Starts the built service on a port of its own choosing (`PORT=0`) with `env` over a minimal
 * environment (PATH, loopback, log level info), its stdout read for the line that says where it
 * listens and its stderr passed through; resolves with the process and its port, and rejects with
 * what it printed if it exits first. For the benches that watch one service process (its CPU, its
 * heap) rather than compare servers, which `startServer` does.
 */
export function startBuiltService(
  env: Record<string, string>,
): Promise<{ readonly child: ChildProcess; readonly port: number; readonly url: string }> {
  const child = spawn(process.execPath, [fileURLToPath(SERVICE_ENTRY)], {
    env: { PATH: process.env.PATH ?? "", PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let output = "";
    // Info level for the line that says where it listens; request logs are counted in the cost.
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      if (output.length < 100_000) output += chunk;
      const port = /"port":(\d+)/.exec(output)?.[1];
      if (port !== undefined) resolve({ child, port: Number(port), url: `http://127.0.0.1:${port}` });
    });
    child.once("exit", (code) =>
      reject(new Error(`the service exited (${code}) before listening: ${output}`)),
    );
  });
}

// bench/dist/servers/ → the repository's root.
const SERVICE_ENTRY = new URL("../../../packages/app/dist/main.js", import.meta.url);

/** The last `lines` lines of `file`, or "" when it cannot be read. */
export function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/** `count` distinct TCP ports nobody listens on right now. */
export async function freePorts(count: number): Promise<number[]> {
  const probes = Array.from({ length: count }, () => createServer());
  const ports = await Promise.all(
    probes.map(
      (probe) =>
        new Promise<number>((resolve, reject) => {
          probe.once("error", reject);
          probe.listen(0, "127.0.0.1", () => {
            const address = probe.address();
            resolve(typeof address === "object" && address !== null ? address.port : 0);
          });
        }),
    ),
  );
  await Promise.all(probes.map((probe) => new Promise((resolve) => probe.close(resolve))));
  return ports;
}

/** Runs `node <args>` to completion; rejects with its output when it fails. */
export async function runNode(args: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  if (code !== 0) throw new Error(`node ${args.join(" ")} exited with ${code}:\n${output}`);
}

/**
 * Starts `node <args>`, which listens on `env.PORT` of 127.0.0.1, and waits until `readyPath`
 * answers 200. The child's stdout and stderr (its logs) are appended to `logFile`.
 */
export async function startServer(
  name: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  logFile: string,
  readyPath = "/api/v1/posts?size=1",
): Promise<ServerProcess> {
  const log = openSync(logFile, "a");
  const child: ChildProcess = spawn(process.execPath, args, { env, stdio: ["ignore", log, log] });
  closeSync(log);
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  let gone = false;
  void exited.then(() => (gone = true));
  const url = `http://127.0.0.1:${env.PORT}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (gone)
      throw new Error(`${name} exited before it was ready; its log (${logFile}) ends:\n${tail(logFile)}`);
    try {
      const response = await fetch(url + readyPath);
      await response.arrayBuffer();
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${name} did not answer ${readyPath} within 60 s`);
    }
    await sleep(200);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${name} has no pid`);
  return {
    name,
    url,
    pid,
    logFile,
    alive: () => !gone,
    async stop() {
      if (gone) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resident set size of process `pid` in bytes (VmRSS), or 0 once it is gone. */
export function residentBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match?.[1] === undefined ? 0 : Number(match[1]) * 1024;
  } catch {
    return 0;
  }
}

/** Samples the RSS of `pid` every 100 ms until the returned function is called; it answers the max. */
export function sampleMaxRss(pid: number): () => number {
  let max = residentBytes(pid);
  const timer = setInterval(() => {
    max = Math.max(max, residentBytes(pid));
  }, 100);
  return () => {
    clearInterval(timer);
    return Math.max(max, residentBytes(pid));
  };
}

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/** CPU time (user + system, all threads) process `pid` has used so far, in seconds; 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  return processCpu(pid)?.seconds ?? 0;
}

/**
 * The command name of process `pid` (`postgres`, `node`) and the CPU time (user + system, all
 * threads) it has used so far in seconds, or `undefined` when there is no such process.
 */
export function processCpu(pid: number): { readonly command: string; readonly seconds: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name is in parentheses and may contain spaces; the fields follow it.
    const close = stat.lastIndexOf(")");
    const fields = stat.slice(close + 2).split(" ");
    return {
      command: stat.slice(stat.indexOf("(") + 1, close),
      seconds: (Number(fields[11]) + Number(fields[12])) / USER_HZ,
    };
  } catch {
    return undefined;
  }
}
