import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** How to start one long-running process of the topology. */
export interface ProcessSpec {
  /** Unique within the topology: `primary`, `standby1`, `pgbouncer`, `instance2`… */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** The signal that stops it cleanly: SIGINT is PostgreSQL's fast shutdown. Default SIGTERM. */
  readonly stopSignal?: NodeJS.Signals;
}

interface Entry {
  readonly pid: number;
  readonly stopSignal: NodeJS.Signals;
}

/**
 * The processes of one topology, each started detached (its own session, output to
 * `<dir>/<name>.log`) and recorded by pid in `<dir>/processes.json` the moment it starts, so
 * that whoever stops the topology (`down`, a test's teardown, an exit guard in another
 * process) stops exactly those processes, by pid, and nothing else.
 */
export class ProcessRegistry {
  readonly #file: string;
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
    this.#file = join(dir, "processes.json");
  }

  /** Every recorded process, by name. */
  entries(): Record<string, Entry> {
    if (!existsSync(this.#file)) return {};
    return JSON.parse(readFileSync(this.#file, "utf8")) as Record<string, Entry>;
  }

  /** The pid of `name` while it runs. */
  pidOf(name: string): number | undefined {
    const entry = this.entries()[name];
    return entry !== undefined && isAlive(entry.pid) ? entry.pid : undefined;
  }

  /** Starts `spec` and records its pid; the process outlives this one unless stopped. */
  start(spec: ProcessSpec): number {
    if (this.pidOf(spec.name) !== undefined) throw new Error(`${spec.name} is already running`);
    const log = openSync(join(this.dir, `${spec.name}.log`), "a");
    const child = spawn(spec.command, [...spec.args], {
      cwd: spec.cwd,
      // Only what a process needs from ours: a setting exported for something else never leaks in.
      env: { ...inherited(), ...spec.env },
      detached: true,
      stdio: ["ignore", log, log],
    });
    closeSync(log);
    if (child.pid === undefined) throw new Error(`${spec.name} did not start (${spec.command})`);
    child.unref();
    this.#record(spec.name, { pid: child.pid, stopSignal: spec.stopSignal ?? "SIGTERM" });
    return child.pid;
  }

  /**
   * Records a process that another one started (PostgreSQL's postmaster under Patroni), so that
   * stopping the topology stops it by its pid too; replaces what `name` recorded before.
   */
  adopt(name: string, pid: number, stopSignal: NodeJS.Signals = "SIGTERM"): void {
    this.#record(name, { pid, stopSignal });
  }

  /** Sends `signal` to `name`'s pid (SIGKILL, SIGSTOP, SIGCONT of a fault), and answers that pid. */
  signal(name: string, signal: NodeJS.Signals): number {
    const pid = this.pidOf(name);
    if (pid === undefined) throw new Error(`${name} is not running`);
    process.kill(pid, signal);
    return pid;
  }

  /** Stops `name` by its pid with its stop signal, SIGKILL after `timeoutMs`; waits until it is gone. */
  async stop(name: string, options: { signal?: NodeJS.Signals; timeoutMs?: number } = {}): Promise<void> {
    const entry = this.entries()[name];
    if (entry === undefined) return;
    await stopPid(entry.pid, options.signal ?? entry.stopSignal, options.timeoutMs ?? 20_000);
    this.#forget(name);
  }

  /** Stops every recorded process, newest first (instances before the databases they use). */
  async stopAll(): Promise<void> {
    for (const name of Object.keys(this.entries()).reverse()) await this.stop(name);
  }

  /** For an exit guard: SIGKILL to every recorded process, synchronously. */
  killAllNow(): void {
    for (const { pid } of Object.values(this.entries())) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  }

  #record(name: string, entry: Entry): void {
    this.#write({ ...this.entries(), [name]: entry });
  }

  #forget(name: string): void {
    const { [name]: _gone, ...rest } = this.entries();
    this.#write(rest);
  }

  #write(entries: Record<string, Entry>): void {
    const temporary = `${this.#file}.tmp`;
    writeFileSync(temporary, JSON.stringify(entries, null, 2));
    renameSync(temporary, this.#file);
  }
}

/** The variables of this process that every started process keeps. */
function inherited(): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "TZ", "LANG", "LC_ALL"]) {
    const value = process.env[name];
    if (value !== undefined) kept[name] = value;
  }
  return kept;
}

/** Whether a process with `pid` exists (and is not a zombie of ours). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // A detached child that exited stays a zombie until reaped: not running.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true;
  }
}

/** Sends `signal` to `pid` and waits until it is gone, SIGKILL after `timeoutMs`. */
export async function stopPid(pid: number, signal: NodeJS.Signals, timeoutMs: number): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, signal);
    // A process a fault froze (SIGSTOP) acts on its stop signal only once it runs again.
    process.kill(pid, "SIGCONT");
  } catch {
    return;
  }
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        return;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
