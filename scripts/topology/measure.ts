import { readdirSync, readFileSync } from "node:fs";
import { signUp } from "./sign-up.js";
import { PORTS, type ServerName, type Topology } from "./topology.js";

/** One way of running the three instances. */
interface Variant {
  readonly name: string;
  readonly env: Readonly<Record<string, string>>;
}

/** What one scenario measured on one variant. */
export interface Measurement {
  readonly round: number;
  readonly variant: string;
  readonly scenario: string;
  readonly requests: number;
  /** How long the requests were sent for. */
  readonly seconds: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU time of the primary's PostgreSQL processes per request, in ms. */
  readonly primaryCpuMs: number;
  /**
   * The same above what the primary spends while no request comes (HAProxy's readiness checks,
   * its background processes, the walsenders): what each read adds, the figure that says how
   * far reads scale.
   */
  readonly primaryCpuAboveIdleMs: number;
  /** CPU time of both standbys' PostgreSQL processes per request, in ms. */
  readonly standbyCpuMs: number;
  /** Reads the standbys answered per statement that asked the primary its position; 0 without standbys. */
  readonly readsPerPositionQuery: number;
  readonly errors: number;
}

const TICKS_PER_SECOND = 100;

/** The variant that reads on the standbys, and the one it is compared with: the same PgBouncer, no standby. */
const WITH_STANDBYS = "two standbys, PgBouncer";
const PRIMARY_ONLY = "primary only, PgBouncer";

/** CPU time, in ms, of the postmaster `pid` and its children (its backends), from /proc. */
function cpuOfServer(pid: number): number {
  let ticks = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    // Fields after the command's closing parenthesis: state ppid … utime (14th) stime (15th).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(entry) !== pid && Number(fields[1]) !== pid) continue;
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}

function cpuOf(topology: Topology, servers: readonly ServerName[]): number {
  return servers.reduce((sum, server) => {
    const pid = topology.processes.pidOf(server);
    return pid === undefined ? sum : sum + cpuOfServer(pid);
  }, 0);
}

/** The sum over the /metrics of the instances at `urls` of the samples of `metric`. */
export async function metricSum(urls: readonly string[], metric: string): Promise<number> {
  let sum = 0;
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const line of text.split("\n")) {
      if (line.startsWith(`${metric}{`) || line.startsWith(`${metric} `))
        sum += Number(line.split(" ").at(-1));
    }
  }
  return sum;
}

/** The `p` quantile (0..1) of ascending `sorted`; 0 when it is empty. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

/** CPU, in ms a second, of the primary's processes while nothing is asked of the instances. */
async function idleCpu(topology: Topology, seconds: number): Promise<number> {
  const before = cpuOf(topology, ["primary"]);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  return (cpuOf(topology, ["primary"]) - before) / seconds;
}

/** Runs `paths` round robin over the three instances with `connections` at once for `seconds`. */
async function load(
  topology: Topology,
  round: number,
  variant: string,
  scenario: string,
  path: (n: number) => string,
  seconds: number,
  connections: number,
): Promise<Measurement> {
  const urls = PORTS.instances.map((_, index) => topology.instanceUrl(index));
  const latencies: number[] = [];
  let errors = 0;
  let n = 0;
  const readsBefore = await metricSum(urls, "db_standby_reads_total");
  const positionsBefore = await metricSum(urls, "db_standby_position_queries_total");
  const primaryBefore = cpuOf(topology, ["primary"]);
  const standbysBefore = cpuOf(topology, ["standby1", "standby2"]);
  const started = performance.now();
  const end = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      // A load generator, not a wait: each connection sends requests back to back until the end.
      while (performance.now() < end) {
        const i = n;
        n += 1;
        const sent = performance.now();
        try {
          const response = await fetch(`${urls[i % urls.length]}${path(i)}`);
          await response.arrayBuffer();
          if (response.status !== 200) errors += 1;
        } catch {
          errors += 1;
        }
        latencies.push(performance.now() - sent);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const requests = latencies.length;
  const primaryCpu = cpuOf(topology, ["primary"]) - primaryBefore;
  const standbyCpu = cpuOf(topology, ["standby1", "standby2"]) - standbysBefore;
  const positions = (await metricSum(urls, "db_standby_position_queries_total")) - positionsBefore;
  const standbyReads = (await metricSum(urls, "db_standby_reads_total")) - readsBefore;
  latencies.sort((a, b) => a - b);
  return {
    round,
    variant,
    scenario,
    requests,
    seconds: elapsed,
    perSecond: requests / elapsed,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    primaryCpuMs: primaryCpu / requests,
    // Set by the caller once it has watched the servers idle.
    primaryCpuAboveIdleMs: Number.NaN,
    standbyCpuMs: standbyCpu / requests,
    readsPerPositionQuery: positions === 0 ? 0 : standbyReads / positions,
    errors,
  };
}

async function restartAll(topology: Topology, env: Readonly<Record<string, string>>): Promise<void> {
  for (const index of PORTS.instances.keys()) await topology.stopInstance(index);
  await Promise.all([...PORTS.instances.keys()].map((index) => topology.startInstance(index, env)));
}

/**
 * What standby reads and PgBouncer cost and save, on a running topology: GET of one post and
 * the first page, round robin over the three instances, on three variants of the instances'
 * configuration (two standbys through PgBouncer; the primary alone through PgBouncer; the
 * primary alone, direct, named statements). Rounds alternate the variants so that each sees the
 * same machine. Leaves the instances as the topology configures them.
 */
export async function measure(
  topology: Topology,
  options: {
    seconds: number;
    rounds: number;
    connections: number;
    /** How long each variant's servers are watched while the instances are asked nothing. */
    idleSeconds: number;
    say: (line: string) => void;
  },
): Promise<Measurement[]> {
  const { say } = options;
  const variants: Variant[] = [
    { name: WITH_STANDBYS, env: {} },
    { name: PRIMARY_ONLY, env: { DATABASE_READ_URLS: "" } },
    {
      name: "primary only, direct",
      env: {
        DATABASE_READ_URLS: "",
        DATABASE_URL: topology.directUrl("primary"),
        DB_NAMED_STATEMENTS: "true",
      },
    },
  ];
  say("seeding 1,000 posts");
  const json = { "content-type": "application/json" };
  const token = await signUp(topology.url, { label: "measure" });
  const ids: string[] = [];
  for (let i = 0; i < 1000; i += 1) {
    const created = await fetch(`${topology.url}/api/v1/posts`, {
      method: "POST",
      headers: { ...json, "x-auth-token": token },
      body: JSON.stringify({ title: `measured ${i}`, content: "x".repeat(200) }),
    });
    ids.push(created.headers.get("location")?.split("/").at(-1) ?? "");
  }
  await topology.waitForReplay();
  const scenarios = [
    { name: "get-one", path: (n: number) => `/api/v1/posts/${ids[(n * 7919) % ids.length]}` },
    { name: "list-first", path: () => "/api/v1/posts" },
  ];
  const results: Measurement[] = [];
  try {
    for (let round = 1; round <= options.rounds; round += 1) {
      for (const variant of variants) {
        say(`round ${round}: ${variant.name}`);
        await restartAll(topology, variant.env);
        let idleBefore: number | undefined;
        const measured: Measurement[] = [];
        for (const scenario of scenarios) {
          // A short warm-up: pools opened, statements prepared, caches filled.
          await load(topology, round, variant.name, scenario.name, scenario.path, 1, options.connections);
          // What the servers spend with the instances started and warm but asked nothing.
          idleBefore ??= await idleCpu(topology, options.idleSeconds);
          measured.push(
            await load(
              topology,
              round,
              variant.name,
              scenario.name,
              scenario.path,
              options.seconds,
              options.connections,
            ),
          );
        }
        // Watched again after the load, and the smaller of the two kept: a checkpoint or an
        // autovacuum run in one window is no part of what the servers spend asked nothing.
        const idleAfter = await idleCpu(topology, options.idleSeconds);
        const idle = Math.min(idleBefore ?? 0, idleAfter);
        for (const m of measured) {
          results.push({ ...m, primaryCpuAboveIdleMs: m.primaryCpuMs - (idle * m.seconds) / m.requests });
        }
      }
    }
  } finally {
    await restartAll(topology, {});
  }
  return results;
}

/** The median of `values` (the upper one of an even count). */
export function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
}

/** The measurements as a Markdown table, the median of the rounds for each variant and scenario. */
export function table(results: readonly Measurement[]): string {
  const keys = [...new Set(results.map((r) => `${r.scenario}\u0000${r.variant}`))];
  const rows = keys.map((key) => {
    const [scenario, variant] = key.split("\u0000") as [string, string];
    const of = results.filter((r) => r.scenario === scenario && r.variant === variant);
    const m = (pick: (r: Measurement) => number) => median(of.map(pick));
    return `| ${scenario} | ${variant} | ${m((r) => r.perSecond).toFixed(0)} | ${m((r) => r.p50Ms).toFixed(2)} | ${m((r) => r.p99Ms).toFixed(2)} | ${m((r) => r.primaryCpuMs).toFixed(4)} | ${m((r) => r.primaryCpuAboveIdleMs).toFixed(4)} | ${m((r) => r.standbyCpuMs).toFixed(4)} | ${m((r) => r.readsPerPositionQuery).toFixed(2)} | ${of.reduce((s, r) => s + r.errors, 0)} |`;
  });
  return [
    "| scenario | instances | req/s | p50 ms | p99 ms | primary CPU ms/req | above idle | standbys CPU ms/req | standby reads per position query | errors |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
}

/**
 * For each scenario, the primary's CPU per read with two standbys over the same without them
 * (both through PgBouncer), each round's own ratio (the variants of a round ran on the same
 * machine, minutes apart), then their median: per request as measured, and above idle, the
 * target of at most 0.2x being judged on the latter (what a read adds to the primary is what
 * limits how far reads scale; what it spends asked nothing does not grow with them).
 */
export function primaryShare(results: readonly Measurement[]): string {
  const lines: string[] = [];
  for (const scenario of new Set(results.map((r) => r.scenario))) {
    const ratios = { raw: [] as number[], aboveIdle: [] as number[] };
    for (const round of new Set(results.map((r) => r.round))) {
      const find = (variant: string) =>
        results.find((r) => r.scenario === scenario && r.round === round && r.variant === variant);
      const standbys = find(WITH_STANDBYS);
      const alone = find(PRIMARY_ONLY);
      if (standbys === undefined || alone === undefined) continue;
      ratios.raw.push(standbys.primaryCpuMs / alone.primaryCpuMs);
      ratios.aboveIdle.push(standbys.primaryCpuAboveIdleMs / alone.primaryCpuAboveIdleMs);
    }
    const shown = (values: number[]) =>
      `${median(values).toFixed(2)}x (rounds ${values.map((v) => v.toFixed(2)).join(", ")})`;
    lines.push(
      `${scenario}: the primary's CPU per read with two standbys / without: ${shown(ratios.aboveIdle)} above idle, ${shown(ratios.raw)} as measured; target <= 0.20x above idle: ${median(ratios.aboveIdle) <= 0.2 ? "PASS" : "FAIL"}`,
    );
  }
  return lines.join("\n");
}
