import { setTimeout as sleep } from "node:timers/promises";
import type { FailoverTopology, NodeName } from "./failover.js";
import { median, percentile } from "./measure.js";
import { signUp } from "./sign-up.js";
import { sql } from "./topology.js";

/** Whether every commit waits for a synchronous standby (the topology's own setting) or not. */
type Replication = "synchronous" | "asynchronous";

/** What one kind of write measured in one round under one kind of replication. */
export interface WriteMeasurement {
  readonly round: number;
  readonly replication: Replication;
  readonly write: "create" | "patch";
  readonly requests: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Answers other than 201 (create) or 200 (patch), and requests that got no answer. */
  readonly errors: number;
}

/**
 * Sets Patroni's synchronous mode through the leader's REST API (`PATCH /config`, stored in
 * etcd for the whole cluster), and waits until the leader's PostgreSQL applies it: a
 * `synchronous_standby_names` naming a standby, or none. Patroni applies it at its next loop.
 */
async function setReplication(
  topology: FailoverTopology,
  leader: NodeName,
  replication: Replication,
): Promise<void> {
  const synchronous = replication === "synchronous";
  const response = await fetch(`${topology.patroniUrl(leader)}/config`, {
    method: "PATCH",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ synchronous_mode: synchronous, synchronous_mode_strict: synchronous }),
  });
  if (!response.ok)
    throw new Error(`Patroni refused the configuration: ${response.status} ${await response.text()}`);
  const deadline = performance.now() + 60_000;
  while (performance.now() < deadline) {
    const [row] = await sql<{ names: string }>(
      topology.nodeUrl(leader),
      "SELECT current_setting('synchronous_standby_names') AS names",
    );
    if (((row?.names ?? "") !== "") === synchronous) return;
    await sleep(500);
  }
  throw new Error(`the leader did not become ${replication} within 60 s`);
}

/** Sends `send` back to back on `connections` at once for `seconds`; the latencies and errors. */
async function drive(
  connections: number,
  seconds: number,
  send: (n: number) => Promise<boolean>,
): Promise<{ latencies: number[]; errors: number; elapsedS: number }> {
  const latencies: number[] = [];
  let errors = 0;
  let n = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      // A load generator, not a wait: each connection sends requests back to back until the end.
      while (performance.now() < end) {
        const sent = performance.now();
        const ok = await send(n++).catch(() => false);
        if (!ok) errors += 1;
        latencies.push(performance.now() - sent);
      }
    }),
  );
  return {
    latencies: latencies.sort((a, b) => a - b),
    errors,
    elapsedS: (performance.now() - started) / 1000,
  };
}

/**
 * What a synchronous standby costs writes, on a running failover topology: creates and title
 * patches through HAProxy and the three instances, with every commit waiting for the synchronous
 * standby (strict mode, as the topology runs) and with plain asynchronous streaming replication
 * (`synchronous_mode: false`), the same nodes, instances and connections. Rounds alternate the
 * two, so that each sees the same machine. Leaves the cluster synchronous and strict, pass or
 * fail.
 */
export async function measureWrites(
  topology: FailoverTopology,
  options: { seconds: number; rounds: number; connections: number; say: (line: string) => void },
): Promise<WriteMeasurement[]> {
  const { say } = options;
  const leader = await topology.waitForHealthyCluster();
  const json = { "content-type": "application/json" };
  const token = await signUp(topology.url, { label: "measure" });
  const authed = { ...json, "x-auth-token": token };
  const ids: string[] = [];
  for (let i = 0; i < 200; i += 1) {
    const created = await fetch(`${topology.url}/api/v1/posts`, {
      method: "POST",
      headers: authed,
      body: JSON.stringify({ title: `patched ${i}`, content: "x".repeat(200) }),
    });
    ids.push(created.headers.get("location")?.split("/").at(-1) ?? "");
  }
  const writes = {
    create: async (n: number) => {
      const response = await fetch(`${topology.url}/api/v1/posts`, {
        method: "POST",
        headers: authed,
        body: JSON.stringify({ title: `measured ${n}`, content: "x".repeat(200) }),
      });
      await response.arrayBuffer();
      return response.status === 201;
    },
    patch: async (n: number) => {
      const response = await fetch(`${topology.url}/api/v1/posts/${ids[n % ids.length]}`, {
        method: "PATCH",
        headers: authed,
        body: JSON.stringify({ title: `title ${n}` }),
      });
      await response.arrayBuffer();
      return response.status === 200;
    },
  } as const;

  const results: WriteMeasurement[] = [];
  try {
    for (let round = 1; round <= options.rounds; round += 1) {
      for (const replication of ["synchronous", "asynchronous"] as const) {
        say(`round ${round}: ${replication}`);
        await setReplication(topology, leader, replication);
        for (const write of ["create", "patch"] as const) {
          // A short warm-up: connections opened, statements prepared.
          await drive(options.connections, 1, writes[write]);
          const { latencies, errors, elapsedS } = await drive(
            options.connections,
            options.seconds,
            writes[write],
          );
          results.push({
            round,
            replication,
            write,
            requests: latencies.length,
            perSecond: latencies.length / elapsedS,
            p50Ms: percentile(latencies, 0.5),
            p99Ms: percentile(latencies, 0.99),
            errors,
          });
        }
      }
    }
  } finally {
    await setReplication(topology, leader, "synchronous");
  }
  return results;
}

/** The measurements as a Markdown table: the median of the rounds for each write and replication. */
export function writeTable(results: readonly WriteMeasurement[]): string {
  const rows = (["create", "patch"] as const).flatMap((write) =>
    (["synchronous", "asynchronous"] as const).map((replication) => {
      const of = results.filter((r) => r.write === write && r.replication === replication);
      const m = (pick: (r: WriteMeasurement) => number) => median(of.map(pick));
      return `| ${write} | ${replication} | ${m((r) => r.perSecond).toFixed(0)} | ${m((r) => r.p50Ms).toFixed(2)} | ${m((r) => r.p99Ms).toFixed(2)} | ${of.reduce((sum, r) => sum + r.errors, 0)} |`;
    }),
  );
  return [
    "| write | replication | req/s | p50 ms | p99 ms | errors |",
    "|---|---|---:|---:|---:|---:|",
    ...rows,
  ].join("\n");
}
