import { randomUUID } from "node:crypto";
import { encodeCursor } from "@posts/domain";
import type autocannon from "autocannon";
import { SEARCH_TERMS, SEED_PASSWORD, seedEmail } from "./database.js";
import type { Workload } from "./load.js";

/** What the scenarios know about the seeded database. */
export interface Fixture {
  readonly users: number;
  readonly posts: number;
  /** A valid token per seeded user: `tokens[u - 1]` belongs to user `u`. */
  readonly tokens: readonly string[];
  readonly connections: number;
  readonly loginConnections: number;
  /** Connections of the search scenarios (the search target judges their p99 at 16). */
  readonly searchConnections: number;
}

/** What a scenario sends, made once before its rounds. */
export interface Prepared {
  readonly workload: Workload;
  /**
   * When present, the service is measured against itself instead of the other servers: this
   * workload runs against the service in the baseline's place, in the same interleaved rounds
   * (a 304 against a plain GET of the same posts, a POST with an Idempotency-Key against one
   * without).
   */
  readonly reference?: { readonly label: string; readonly workload: Workload };
}

/** One kind of traffic the benchmark measures. */
export interface Scenario {
  readonly name: string;
  readonly description: string;
  /** `serviceUrl` is for scenarios that ask the service what their requests need (entity tags). */
  prepare(fixture: Fixture, serviceUrl: string): Prepared | Promise<Prepared>;
}

/** An integer in [1, n]. */
const pick = (n: number) => 1 + Math.floor(Math.random() * n);

const JSON_HEADERS = { "content-type": "application/json" };

/** A request whose path (and body, headers) `next` chooses afresh for every request sent. */
function varying(
  method: autocannon.Request["method"],
  next: () => { path: string; headers?: Record<string, string>; body?: string },
): autocannon.Request {
  return { method, path: "/", setupRequest: (request) => ({ ...request, ...next() }) };
}

/**
 * The cursor of a page of 20 posts just newer than the oldest 1 % of `posts` (ids posts / 100 + 21
 * down to posts / 100 + 2): 99 % of the listing deep, and still 20 posts and a next page. One
 * page, as list-first is one page, so the two differ in depth only; spreading the deep requests
 * over many pages would also measure how well PostgreSQL's buffers and the CPU caches hold them,
 * which is not depth. Not the very last page: the oldest posts hold the seed's old-end search
 * terms (a Korean word in the titles of the oldest 0.1 %, a sentence more in the contents of the
 * oldest 1 %; `SEARCH_TERMS`), which made that page's posts longer than the newest, and
 * Korean titles cost more to encode, on every server (bench/RESULTS.md).
 */
const deepCursor = (posts: number) => encodeCursor(Math.floor(posts / 100) + 22);

/** list-first's requests. */
const firstPage = (f: Fixture): Workload => ({
  connections: f.connections,
  // Built per request like list-deep's, so that the two differ only in the server's work:
  // a static request costs autocannon, on the same two cores, less than a varying one.
  request: varying("GET", () => ({ path: "/api/v1/posts?size=20" })),
});

/**
 * list-deep's requests. The path is made once: encoding the cursor for every request cost the
 * load generator, which shares the two cores and is the narrower side at list-first's rate, a
 * few per cent of list-deep's requests, which list-first did not pay.
 */
const deepPage = (f: Fixture): Workload => {
  const path = `/api/v1/posts?size=20&cursor=${deepCursor(f.posts)}`;
  return { connections: f.connections, request: varying("GET", () => ({ path })) };
};

/** How many different pages list-cold spreads over, at most. */
const COLD_PAGES = 50_000;

/** How many posts get-304 spreads over: their entity tags are fetched before the rounds. */
const CONDITIONAL_SAMPLE = 5000;

/**
 * The entity tags of `count` distinct seeded posts picked at random, as the service answers
 * them, fetched 32 at a time: [id, ETag] pairs.
 */
async function entityTags(serviceUrl: string, posts: number, count: number): Promise<[number, string][]> {
  const ids = new Set<number>();
  while (ids.size < Math.min(count, posts)) ids.add(pick(posts));
  const queue = [...ids];
  const tags: [number, string][] = [];
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      for (let id = queue.pop(); id !== undefined; id = queue.pop()) {
        const response = await fetch(`${serviceUrl}/api/v1/posts/${id}`);
        await response.arrayBuffer();
        const tag = response.headers.get("etag");
        if (!response.ok || tag === null)
          throw new Error(`GET of post ${id} answered ${response.status} without an ETag`);
        tags.push([id, tag]);
      }
    }),
  );
  return tags;
}

/** A search of `term` (at 16 connections, where its p99 target is set). */
function search(name: string, term: string, what: string): Scenario {
  const path = `/api/v1/posts?size=20&q=${encodeURIComponent(term)}`;
  return {
    name,
    description: `GET /api/v1/posts?size=20&q=${term} (${what})`,
    prepare: (f) => ({
      workload: { connections: f.searchConnections, request: varying("GET", () => ({ path })) },
    }),
  };
}

/** POST of a new post as a random user; `keyed`: each with an Idempotency-Key never used before. */
function create(f: Fixture, keyed: boolean): Workload {
  // With the seed's common term, so that it stays in every post for the search scenarios of a
  // later run on the same database (--reuse-database).
  const body = JSON.stringify({
    title: "Benchmark post",
    content: `Lorem ${SEARCH_TERMS.common}, written by the benchmark. `.repeat(9),
  });
  // Unique across runs too, should the database be reused.
  const run = randomUUID();
  let sent = 0;
  return {
    connections: f.connections,
    request: varying("POST", () => ({
      path: "/api/v1/posts",
      headers: {
        ...JSON_HEADERS,
        "x-auth-token": f.tokens[pick(f.users) - 1] as string,
        ...(keyed ? { "idempotency-key": `${run}-${++sent}` } : {}),
      },
      body,
    })),
  };
}

/** GET of a random seeded post, from `connections` connections. */
function getOne(f: Fixture, connections: number): Workload {
  return { connections, request: varying("GET", () => ({ path: `/api/v1/posts/${pick(f.posts)}` })) };
}

/** The name of `--closed-loop`'s GET one at `connections` connections. */
export const closedLoopName = (connections: number) => `get-one-c${connections}`;

/**
 * `--closed-loop`'s scenarios: GET one at each of `connections`, each connection sending its
 * next request as soon as its answer came, so that a server's wait per request, not only its
 * work, sets its rate. Driven by wrk, whose own CPU takes less of the two cores than
 * autocannon's would: in a closed loop the driver's cost per request is paid beside every
 * server's, and a large one shrinks the ratio between them.
 */
export function closedLoopScenarios(connections: readonly number[]): Scenario[] {
  return connections.map((count) => ({
    name: closedLoopName(count),
    description: `GET /api/v1/posts/<random seeded id> from ${count} connection${count === 1 ? "" : "s"}, closed loop (wrk)`,
    prepare: (f) => ({
      workload: {
        ...getOne(f, count),
        wrkRequest: `request = function() return wrk.format("GET", "/api/v1/posts/" .. math.random(${f.posts})) end`,
      },
    }),
  }));
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: "get-one",
    description: "GET /api/v1/posts/<random seeded id>",
    prepare: (f) => ({ workload: getOne(f, f.connections) }),
  },
  {
    name: "get-304",
    description: `GET /api/v1/posts/<one of ${CONDITIONAL_SAMPLE} seeded ids> with If-None-Match: its ETag (304), against the same GET without it (200)`,
    prepare: async (f, serviceUrl) => {
      const sample = await entityTags(serviceUrl, f.posts, CONDITIONAL_SAMPLE);
      const get = (conditional: boolean): Workload => ({
        connections: f.connections,
        ...(conditional ? { expectedStatus: 304 } : {}),
        request: varying("GET", () => {
          const [id, tag] = sample[pick(sample.length) - 1] as [number, string];
          return {
            path: `/api/v1/posts/${id}`,
            ...(conditional ? { headers: { "if-none-match": tag } } : {}),
          };
        }),
      });
      return { workload: get(true), reference: { label: "service, plain GET", workload: get(false) } };
    },
  },
  {
    name: "list-first",
    description: "GET /api/v1/posts?size=20 (newest page)",
    prepare: (f) => ({ workload: firstPage(f) }),
  },
  {
    name: "list-deep",
    description: "GET /api/v1/posts?size=20&cursor=<a page 99 % deep>",
    prepare: (f) => ({ workload: deepPage(f) }),
  },
  {
    // list-deep against list-first measured apart, in scenarios a minute apart, moved by more than
    // the 5 % the target allows between them (the baseline's own ratio 0.84–0.97 on the same SQL):
    // alternating slices of one round see the same machine.
    name: "list-depth",
    description: "list-deep's requests against list-first's, both on the service, in alternating slices",
    prepare: (f) => ({
      workload: deepPage(f),
      reference: { label: "service, list-first", workload: firstPage(f) },
    }),
  },
  {
    name: "list-user",
    description: "GET /api/v1/posts?size=20&userId=<random user>",
    prepare: (f) => ({
      workload: {
        connections: f.connections,
        request: varying("GET", () => ({ path: `/api/v1/posts?size=20&userId=${pick(f.users)}` })),
      },
    }),
  },
  {
    name: "list-cold",
    description: `GET /api/v1/posts?size=20&cursor=<one of ${COLD_PAGES} pages, at random>`,
    prepare: (f) => {
      // Pages that do not overlap, spread over the whole listing: page k holds the posts
      // 20k down to 20k - 19. Almost every request reads posts no recent request read, so what
      // a server (or PostgreSQL) keeps of recent pages hardly helps. The cursors are made
      // beforehand, so that the client's work per request is list-deep's.
      const pages = Math.min(COLD_PAGES, Math.floor((f.posts - 1) / 20));
      const cursors = Array.from({ length: pages }, (_, k) => encodeCursor(20 * (k + 1) + 1));
      return {
        workload: {
          connections: f.connections,
          request: varying("GET", () => ({
            path: `/api/v1/posts?size=20&cursor=${cursors[pick(pages) - 1]}`,
          })),
        },
      };
    },
  },
  search("search-rare", SEARCH_TERMS.rare, "in 0.01 % of the posts: the trigram indexes' bitmap"),
  search(
    "search-common",
    SEARCH_TERMS.common,
    "in every post: a walk of the primary key that stops after a page",
  ),
  search("search-korean", SEARCH_TERMS.korean, "Korean, in 5 % of the posts"),
  {
    name: "create",
    description: "POST /api/v1/posts as a random user",
    prepare: (f) => ({ workload: create(f, false) }),
  },
  {
    name: "create-key",
    description:
      "POST /api/v1/posts as a random user with a new Idempotency-Key, against the same POST without one",
    prepare: (f) => ({
      workload: create(f, true),
      reference: { label: "service, POST without a key", workload: create(f, false) },
    }),
  },
  {
    name: "patch",
    description: "PATCH /api/v1/posts/<a seeded post of the token's user> {title}",
    prepare: (f) => ({
      workload: {
        connections: f.connections,
        request: varying("PATCH", () => {
          const user = pick(f.users);
          // Seeded post ids of user u are u, u + users, u + 2·users, ... (see seedAuthor).
          const id = user + f.users * (pick(Math.floor((f.posts - user) / f.users) + 1) - 1);
          return {
            path: `/api/v1/posts/${id}`,
            headers: { ...JSON_HEADERS, "x-auth-token": f.tokens[user - 1] as string },
            body: JSON.stringify({ title: `Edited ${Date.now()}` }),
          };
        }),
      },
    }),
  },
  {
    name: "login",
    description: "POST /api/v1/user/login as a random user, beside a steady trickle of GET one post",
    prepare: (f) => ({
      workload: {
        connections: f.loginConnections,
        request: varying("POST", () => ({
          path: "/api/v1/user/login",
          headers: JSON_HEADERS,
          body: JSON.stringify({ email: seedEmail(pick(f.users)), password: SEED_PASSWORD }),
        })),
      },
    }),
  },
];

/** The light read traffic sent beside the logins, whose server-side event-loop delay is judged. */
export function probeWorkload(f: Fixture, rate: number): Workload {
  return {
    connections: 4,
    overallRate: rate,
    request: varying("GET", () => ({ path: `/api/v1/posts/${pick(f.posts)}` })),
  };
}
