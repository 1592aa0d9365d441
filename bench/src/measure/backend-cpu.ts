import type pg from "pg";
import { processCpu } from "../servers/server-process.js";

/** CPU seconds used so far by each PostgreSQL backend process, by pid. */
export type BackendCpu = ReadonlyMap<number, number>;

/**
 * The CPU time used so far by each PostgreSQL backend serving a connection whose
 * `application_name` is `applicationName`, asked of `pg_stat_activity` through `client` and read
 * from /proc. Only a PostgreSQL server on this machine can be measured so: a pid that is not a
 * local `postgres` process is left out, and a server elsewhere gives an empty map.
 */
export async function readBackendCpu(client: pg.Client, applicationName: string): Promise<BackendCpu> {
  const { rows } = await client.query<{ pid: number }>(
    "select pid from pg_stat_activity where application_name = $1 and datname = current_database()",
    [applicationName],
  );
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    const process = processCpu(pid);
    if (process?.command === "postgres") cpu.set(pid, process.seconds);
  }
  return cpu;
}

/**
 * CPU seconds the backends used between two readings: one that connected in between counts
 * from zero, one that disconnected in between is lost (a pool under load keeps its
 * connections). NaN when the later reading found no backend: nothing was measured.
 */
export function backendCpuBetween(before: BackendCpu, after: BackendCpu): number {
  if (after.size === 0) return Number.NaN;
  let seconds = 0;
  for (const [pid, total] of after) seconds += total - (before.get(pid) ?? 0);
  return seconds;
}
