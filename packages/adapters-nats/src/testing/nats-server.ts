import type { ChildProcess } from "node:child_process";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as connectTcp } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** A `nats-server -js` of a test's own, on a fixed port and a store directory of its own. */
export interface TestNatsServer {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** The JetStream store directory; kept across restarts, removed by `close()`. */
  readonly storeDir: string;
  /** The running process's id, or `undefined` while it is stopped. */
  pid(): number | undefined;
  /** Ends the process with `signal` (default SIGKILL: a crash) and waits for its exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Freezes the process (SIGSTOP): connections stay open and nothing answers, as a hung server. */
  pause(): void;
  /** Lets a paused process run again (SIGCONT). */
  resume(): void;
  /** Starts it again on the same port and store directory; waits until it accepts connections. */
  restart(): Promise<void>;
  /** Kills it if running and removes its store directory. Idempotent. */
  close(): Promise<void>;
}

const running = new Set<ChildProcess>();
let exitGuard = false;

// Debian installs it in /usr/sbin, which is on root's PATH only.
const BINARY = ["nats-server", "/usr/sbin/nats-server"].find(
  (candidate) => spawnSync(candidate, ["--version"], { stdio: "ignore" }).status === 0,
);

/** Whether `nats-server` can be run here (on `PATH`, or Debian's `/usr/sbin/nats-server`). */
export function natsServerAvailable(): boolean {
  return BINARY !== undefined;
}

/**
 * The prerequisite of a suite that starts NATS servers of its own, for `describeNeeding` of
 * `@posts/domain/testing/vitest` (its `Prerequisite`, declared here by shape: this package does
 * not depend on the domain): present when {@link natsServerAvailable}.
 */
export function natsServerForTests(): {
  readonly needs: string;
  readonly hint: string;
  readonly present: boolean;
} {
  return {
    needs: "nats-server",
    hint: "apt-get install nats-server",
    present: natsServerAvailable(),
  };
}

/**
 * Starts `nats-server -js -sd <a new temporary directory> -a 127.0.0.1 -p <port>` and waits
 * until it accepts connections. Every server started here is killed by its process id when the
 * test process exits, whatever happened; call `close()` in `afterAll` all the same. Give it a
 * port below 32768: one in Linux's ephemeral range may be held by any outgoing connection.
 */
export async function startNatsServer(port: number): Promise<TestNatsServer> {
  const storeDir = mkdtempSync(join(tmpdir(), "posts-nats-"));
  let child: ChildProcess | undefined;
  let output = "";

  const launch = async () => {
    output = "";
    const started = spawn(
      BINARY ?? "nats-server",
      ["-js", "-sd", storeDir, "-a", "127.0.0.1", "-p", String(port)],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const collect = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-8000);
    };
    started.stdout?.on("data", collect);
    started.stderr?.on("data", collect);
    started.once("exit", () => running.delete(started));
    running.add(started);
    guardExit();
    child = started;
    const deadline = Date.now() + 15_000;
    while (!(await accepts(port))) {
      if (started.exitCode !== null || started.signalCode !== null || Date.now() > deadline) {
        started.kill("SIGKILL");
        throw new Error(`nats-server did not start on port ${port}\n${output}`);
      }
      await sleep(50);
    }
  };

  const kill = async (signal: NodeJS.Signals = "SIGKILL") => {
    const current = child;
    child = undefined;
    if (current === undefined || current.exitCode !== null || current.signalCode !== null) return;
    const exited = new Promise((resolve) => current.once("exit", resolve));
    current.kill(signal);
    await exited;
  };

  await launch();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    pid: () => child?.pid,
    kill,
    pause: () => child?.kill("SIGSTOP"),
    resume: () => child?.kill("SIGCONT"),
    restart: async () => {
      await kill();
      await launch();
    },
    close: async () => {
      await kill();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

function guardExit() {
  if (exitGuard) return;
  exitGuard = true;
  process.once("exit", () => {
    for (const child of running) child.kill("SIGKILL");
  });
}

// The app's tests probe their service alike (test/support/service-process.ts): this is the testing
// entry point of a published adapter, and the app's test support is in no package to import.
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connectTcp(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
