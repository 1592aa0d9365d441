/**
 * `pnpm bench:events`: what change events cost writes, and how fast they travel. Starts the built
 * service on a database of its own on DATABASE_URL's server (default
 * postgres://postgres@127.0.0.1:5432/postgres), relaying to a NATS server of the bench's own
 * (`nats-server -js` on port 21321, when the machine has one and NATS is not `off`), and measures:
 *
 * - POSTs and PATCHes per second from CLIENTS concurrent clients (default 16) with events on and
 *   with the triggers that write them disabled (events off, the service unchanged), in ROUNDS
 *   rounds (default 6) of SLICE_MS slices (default 3000) that alternate on/off and off/on, so both
 *   see the same machine; the ratio on/off is taken per round, then its median, as `pnpm bench`
 *   does for its servers;
 * - the delay from each of DELAYS (default 300) sequential POSTs' response to its event on an open
 *   Server-Sent Events stream and in the JetStream stream (p50, p99);
 * - how many events per second one stream reader gets when it resumes from the start;
 * - what relaying an event costs on its own: with NATS stopped, CATCH_UP (default 30000) posts
 *   inserted in one statement, then NATS started again and the CPU the service and the NATS
 *   server use until the stream holds every event, per event (the service does nothing else
 *   meanwhile, so its CPU is the relay's: reading the log, rendering, publishing);
 * - where the CPU of a write goes, events on and off: microseconds per write used by the service
 *   process, the NATS server, the PostgreSQL backends of the bench's database and the bench's
 *   own clients (from /proc, so on this machine only), because on a machine of two cores a cost
 *   paid by the broker slows the service's writes as surely as one paid inside it;
 * - the bytes of WAL per write, events on and off (the server's whole WAL: run it alone), which
 *   every standby replays and every backup keeps.
 *
 * Prints JSON; bench/RESULTS.md keeps it.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect as connectNats } from "@nats-io/transport-node";
import { natsServerAvailable, startNatsServer, type TestNatsServer } from "@posts/adapters-nats/testing";
import { createParser } from "eventsource-parser";
import pg from "pg";
import { recreateDatabase, withDatabase } from "./load/database.js";
import { median } from "./measure/stats.js";
import { cpuSeconds, processCpu, startBuiltService } from "./servers/server-process.js";

const SERVER = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const DATABASE = "posts_bench_events";
const ROUNDS = Number(process.env.ROUNDS ?? "6");
const SLICE_MS = Number(process.env.SLICE_MS ?? "3000");
const CLIENTS = Number(process.env.CLIENTS ?? "16");
const DELAYS = Number(process.env.DELAYS ?? "300");
const CATCH_UP = Number(process.env.CATCH_UP ?? "30000");
// The bench's own NATS server: a port no test uses (their servers take 21301–21309).
const NATS_PORT = 21321;
const WITH_NATS = process.env.NATS !== "off" && natsServerAvailable();

const json = (token?: string) => ({
  "content-type": "application/json",
  ...(token === undefined ? {} : { "x-auth-token": token }),
});

async function signUp(base: string): Promise<string> {
  const email = `bench-${randomBytes(6).toString("hex")}@example.com`;
  const body = JSON.stringify({ email, password: "bench password" });
  await fetch(`${base}/api/v1/user`, { method: "POST", headers: json(), body });
  const login = await fetch(`${base}/api/v1/user/login`, { method: "POST", headers: json(), body });
  return ((await login.json()) as { token: string }).token;
}

async function createPost(base: string, token: string, title: string): Promise<number> {
  const response = await fetch(`${base}/api/v1/posts`, {
    method: "POST",
    headers: json(token),
    body: JSON.stringify({ title, content: "bench content of a modest length, like a short post." }),
  });
  if (response.status !== 201) throw new Error(`POST answered ${response.status}`);
  return Number(response.headers.get("location")?.split("/").at(-1));
}

/**
 * CPU seconds used so far by each process a write passes through, and the server's WAL position
 * in bytes (`walBytes` stays bytes when two readings give a cost per write, not microseconds).
 */
interface CpuReading {
  readonly service: number;
  readonly nats: number;
  readonly postgres: number;
  readonly bench: number;
  readonly walBytes: number;
}

/** Where the CPU goes; the PostgreSQL side is every backend connected to the bench's database. */
interface CpuMeter {
  read(): Promise<CpuReading>;
}

function cpuMeter(admin: pg.Client, servicePid: number, natsPid: number | undefined): CpuMeter {
  return {
    read: async () => {
      const { rows } = await admin.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
      );
      let postgres = 0;
      for (const { pid } of rows) {
        const backend = processCpu(pid);
        if (backend?.command === "postgres") postgres += backend.seconds;
      }
      const own = process.cpuUsage();
      const wal = await admin.query<{ bytes: string }>(
        "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0') AS bytes",
      );
      return {
        service: cpuSeconds(servicePid),
        nats: natsPid === undefined ? 0 : cpuSeconds(natsPid),
        postgres,
        bench: (own.user + own.system) / 1e6,
        walBytes: Number(wal.rows[0]?.bytes),
      };
    },
  };
}

/** Microseconds of CPU per request of each process between two readings, and bytes of WAL. */
function cpuPerRequest(before: CpuReading, after: CpuReading, requests: number): CpuReading {
  const micros = (pick: (reading: CpuReading) => number) =>
    Math.round(((pick(after) - pick(before)) * 1e6) / Math.max(1, requests));
  return {
    service: micros((r) => r.service),
    nats: micros((r) => r.nats),
    postgres: micros((r) => r.postgres),
    bench: micros((r) => r.bench),
    walBytes: Math.round((after.walBytes - before.walBytes) / Math.max(1, requests)),
  };
}

/** Requests per second of `request` from CLIENTS loops over SLICE_MS, and their CPU per request. */
async function throughput(
  meter: CpuMeter,
  request: (client: number, i: number) => Promise<void>,
): Promise<{ perSecond: number; cpu: CpuReading }> {
  const before = await meter.read();
  const deadline = Date.now() + SLICE_MS;
  let done = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let i = 0; Date.now() < deadline; i++) {
        await request(client, i);
        done++;
      }
    }),
  );
  const cpu = cpuPerRequest(before, await meter.read(), done);
  return { perSecond: +(done / (SLICE_MS / 1000)).toFixed(1), cpu };
}

/** POSTs per second, then PATCHes per second of each client's post in `patched`, one slice each. */
async function writes(
  meter: CpuMeter,
  base: string,
  tokens: readonly string[],
  patched: readonly number[],
  label: string,
) {
  const posts = await throughput(meter, async (client, i) => {
    await createPost(base, tokens[client] as string, `${label} ${client}-${i}`);
  });
  const patches = await throughput(meter, async (client, i) => {
    const response = await fetch(`${base}/api/v1/posts/${patched[client]}`, {
      method: "PATCH",
      headers: json(tokens[client]),
      body: JSON.stringify({ title: `${label} v${i}` }),
    });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`PATCH answered ${response.status}`);
  });
  return {
    postsPerSecond: posts.perSecond,
    patchesPerSecond: patches.perSecond,
    cpuMicrosPerPost: posts.cpu,
    cpuMicrosPerPatch: patches.cpu,
  };
}

async function setEvents(admin: pg.Client, on: boolean): Promise<void> {
  const verb = on ? "ENABLE" : "DISABLE";
  await admin.query(`ALTER TABLE posts ${verb} TRIGGER posts_record_created`);
  await admin.query(`ALTER TABLE posts ${verb} TRIGGER posts_record_deleted`);
  await admin.query(`ALTER TABLE posts ${verb} TRIGGER posts_record_updated`);
  // Each ALTER TABLE cancels a running autovacuum of posts, so toggling every few seconds would
  // keep the tables from ever being vacuumed, as no running service keeps them: dead rows would
  // pile up in the outbox's indexes and make each slice slower than the one before. Vacuumed
  // here, outside the timed slices, both sides start from tables as autovacuum leaves them.
  await admin.query("VACUUM posts, post_events");
}

/** Arrival times of the JetStream stream's events by post id, from an ordered consumer of new messages. */
async function natsReader(url: string) {
  const connection = await connectNats({ servers: url });
  const manager = await jetstreamManager(connection);
  // The relay creates the stream when it first publishes; the delays are measured after that.
  for (let tries = 0; !(await manager.streams.names().next()).includes("POSTS"); tries++) {
    if (tries > 200) throw new Error("the relay made no stream POSTS in 20 s");
    await sleep(100);
  }
  const consumer = await jetstream(connection).consumers.get("POSTS", { deliver_policy: DeliverPolicy.New });
  const messages = await consumer.consume();
  const arrivals = new Map<string, number>();
  const reading = (async () => {
    for await (const message of messages) {
      const subject = (message.json() as { subject?: string }).subject;
      if (subject !== undefined) arrivals.set(subject, Date.now());
    }
  })();
  return {
    arrivals,
    close: async () => {
      await messages.close();
      await reading;
      await connection.close();
    },
  };
}

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;

/** Reads a stream until `until` holds of the number of events received; answers arrival times by subject. */
function streamReader(url: string, headers: Record<string, string>) {
  const abort = new AbortController();
  const arrivals = new Map<string, number>();
  let count = 0;
  let lastId = 0;
  const reading = (async () => {
    const response = await fetch(url, {
      headers: { accept: "text/event-stream", ...headers },
      signal: abort.signal,
    });
    const parser = createParser({
      onEvent: ({ id, data }) => {
        if (id === undefined) return;
        count++;
        lastId = Number(id);
        const subject = /"subject":"(\d+)"/.exec(data)?.[1];
        if (subject !== undefined) arrivals.set(subject, Date.now());
      },
    });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body ?? [])
        parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch {
      // Aborted.
    }
  })();
  return {
    arrivals,
    count: () => count,
    lastId: () => lastId,
    close: async () => {
      abort.abort();
      await reading;
    },
  };
}

/** The newest event number the log has given (0 before the first). */
async function lastEventNumber(admin: pg.Client): Promise<number> {
  const { rows } = await admin.query<{ last: string | null }>("SELECT max(number) AS last FROM post_events");
  return Number(rows[0]?.last ?? 0);
}

/**
 * Waits until the JetStream stream `POSTS` holds at least `count` messages, asking on one
 * connection of its own (a connection per question would add the server's CPU of accepting it).
 */
async function waitForStream(url: string, count: number, timeoutMs: number): Promise<void> {
  const connection = await connectNats({ servers: url });
  try {
    const manager = await jetstreamManager(connection);
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline) {
      const messages = await manager.streams.info("POSTS").then(
        (info) => info.state.messages,
        () => 0,
      );
      if (messages >= count) return;
      await sleep(100);
    }
    throw new Error(`the stream did not reach ${count} messages within ${timeoutMs} ms`);
  } finally {
    await connection.close();
  }
}

/**
 * The relay's CPU per event on its own: NATS stopped, `count` events written in one statement
 * and numbered, NATS started again, and the service's and the NATS server's CPU from then until
 * the stream holds them all. The relay publishes such a backlog in batches of its full size.
 */
async function relayCatchUp(admin: pg.Client, nats: TestNatsServer, servicePid: number, count: number) {
  const published = await lastEventNumber(admin);
  await waitForStream(nats.url, published, 60_000);
  await nats.kill("SIGTERM");
  await admin.query(
    `INSERT INTO posts (title, content, created_at, updated_at, user_id)
     SELECT 'catch-up ' || i, 'bench content of a modest length, like a short post.', now(), now(),
            (SELECT min(id) FROM users)
       FROM generate_series(1, $1::int) AS i`,
    [count],
  );
  // Numbered by the service's periodic check (every 5 s): nothing woke its sequencer.
  const total = published + count;
  const deadline = Date.now() + 60_000;
  while ((await lastEventNumber(admin)) < total && Date.now() < deadline) await sleep(50);
  // The service's CPU from before the restart (its relay may reconnect at once); the server's
  // from after it, once it has recovered its store.
  const service0 = cpuSeconds(servicePid);
  await nats.restart();
  const natsPid = nats.pid() as number;
  const nats0 = cpuSeconds(natsPid);
  const started = performance.now();
  await waitForStream(nats.url, total, 120_000);
  const seconds = (performance.now() - started) / 1000;
  const perEvent = (cpu: number) => +((cpu * 1e6) / count).toFixed(1);
  return {
    events: count,
    // From the restart: the relay reconnects and backs off first, so this is not its speed.
    secondsFromRestart: +seconds.toFixed(2),
    cpuMicrosPerEvent: {
      service: perEvent(cpuSeconds(servicePid) - service0),
      nats: perEvent(cpuSeconds(natsPid) - nats0),
    },
  };
}

async function main() {
  await recreateDatabase(SERVER, DATABASE);
  const url = withDatabase(SERVER, DATABASE);
  const nats: TestNatsServer | undefined = WITH_NATS ? await startNatsServer(NATS_PORT) : undefined;
  const { child, url: base } = await startBuiltService({
    DATABASE_URL: url,
    JWT_SECRET: randomBytes(48).toString("base64url"),
    LOGIN_THROTTLE_MAX: "100000",
    ...(nats === undefined ? {} : { NATS_URL: nats.url }),
  });
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const meter = cpuMeter(admin, child.pid as number, nats?.pid());
  try {
    const tokens = await Promise.all(Array.from({ length: CLIENTS }, () => signUp(base)));
    const patched = await Promise.all(
      tokens.map((token, client) => createPost(base, token, `patched ${client}`)),
    );
    await writes(meter, base, tokens, patched, "warm-up on");
    await setEvents(admin, false);
    await writes(meter, base, tokens, patched, "warm-up off");
    const rounds: { on: Awaited<ReturnType<typeof writes>>; off: Awaited<ReturnType<typeof writes>> }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [true, false] : [false, true];
      const measured: Partial<(typeof rounds)[number]> = {};
      for (const on of order) {
        await setEvents(admin, on);
        measured[on ? "on" : "off"] = await writes(
          meter,
          base,
          tokens,
          patched,
          `round ${round} ${on ? "on" : "off"}`,
        );
      }
      rounds.push(measured as (typeof rounds)[number]);
    }
    await setEvents(admin, true);
    const ratio = (pick: (w: Awaited<ReturnType<typeof writes>>) => number) =>
      +median(rounds.map((round) => pick(round.on) / pick(round.off))).toFixed(3);

    // The median over rounds of each process's CPU per write, events on and off.
    const cpu = (pick: (w: Awaited<ReturnType<typeof writes>>) => CpuReading) => {
      const of = (side: "on" | "off") => {
        const readings = rounds.map((round) => pick(round[side]));
        const m = (key: keyof CpuReading) => median(readings.map((reading) => reading[key]));
        return {
          service: m("service"),
          nats: m("nats"),
          postgres: m("postgres"),
          bench: m("bench"),
          walBytes: m("walBytes"),
        };
      };
      return { on: of("on"), off: of("off") };
    };

    const stream = streamReader(`${base}/api/v1/posts/events`, {});
    const inNats = nats === undefined ? undefined : await natsReader(nats.url);
    await sleep(500);
    const toFeed: number[] = [];
    const toNats: number[] = [];
    for (let i = 0; i < DELAYS; i++) {
      const id = String(await createPost(base, tokens[0] as string, `delay ${i}`));
      const answered = Date.now();
      const arrived = () => stream.arrivals.has(id) && (inNats === undefined || inNats.arrivals.has(id));
      while (!arrived() && Date.now() - answered < 10_000) await sleep(1);
      toFeed.push((stream.arrivals.get(id) ?? Number.NaN) - answered);
      if (inNats !== undefined) toNats.push((inNats.arrivals.get(id) ?? Number.NaN) - answered);
    }
    await stream.close();
    await inNats?.close();
    const summary = (delays: number[]) => {
      delays.sort((a, b) => a - b);
      return {
        samples: delays.length,
        p50: percentile(delays, 50),
        p99: percentile(delays, 99),
        max: delays.at(-1),
      };
    };

    const total = await lastEventNumber(admin);
    const started = Date.now();
    const reader = streamReader(`${base}/api/v1/posts/events`, { "last-event-id": "0" });
    while (reader.lastId() < total && Date.now() - started < 120_000) await sleep(10);
    const seconds = (Date.now() - started) / 1000;
    await reader.close();
    const catchUp =
      nats === undefined ? null : await relayCatchUp(admin, nats, child.pid as number, CATCH_UP);

    console.log(
      JSON.stringify(
        {
          clients: CLIENTS,
          rounds: ROUNDS,
          sliceMs: SLICE_MS,
          natsRelay: nats !== undefined,
          ratioOnOff: {
            posts: ratio((w) => w.postsPerSecond),
            patches: ratio((w) => w.patchesPerSecond),
          },
          cpuMicrosPerWrite: {
            posts: cpu((w) => w.cpuMicrosPerPost),
            patches: cpu((w) => w.cpuMicrosPerPatch),
          },
          perRound: rounds,
          delayResponseToFeedMs: summary(toFeed),
          delayResponseToJetStreamMs: inNats === undefined ? null : summary(toNats),
          oneReader: {
            events: reader.count(),
            seconds,
            eventsPerSecond: Math.round(reader.count() / seconds),
          },
          relayCatchUp: catchUp,
        },
        null,
        2,
      ),
    );
  } finally {
    await admin.end();
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
    await nats?.close();
  }
}

await main();
