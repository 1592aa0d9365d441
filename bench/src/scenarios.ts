import { encodeCursor } from "@posts/domain";
import type autocannon from "autocannon";
import { SEED_PASSWORD, seedEmail } from "./database.js";
import type { Workload } from "./load.js";

/** What the scenarios know about the seeded database. */
export interface Fixture {
  readonly users: number;
  readonly posts: number;
  /** A valid token per seeded user: `tokens[u - 1]` belongs to user `u`. */
  readonly tokens: readonly string[];
  readonly connections: number;
  readonly loginConnections: number;
}

/** One kind of traffic the benchmark measures. */
export interface Scenario {
  readonly name: string;
  readonly description: string;
  workload(fixture: Fixture): Workload;
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
 * The cursor of the last full page of the whole listing (the posts with ids 21 down to 2): a
 * million posts deep, and still 20 posts and a next page. One page, as list-first is one page,
 * so the two differ in depth only; spreading the deep requests over many pages would also
 * measure how well PostgreSQL's buffers and the CPU caches hold them, which is not depth.
 */
const DEEP_CURSOR = encodeCursor(22);

/** How many different pages list-cold spreads over, at most. */
const COLD_PAGES = 50_000;

export const SCENARIOS: readonly Scenario[] = [
  {
    name: "get-one",
    description: "GET /api/v1/posts/<random seeded id>",
    workload: (f) => ({
      connections: f.connections,
      request: varying("GET", () => ({ path: `/api/v1/posts/${pick(f.posts)}` })),
    }),
  },
  {
    name: "list-first",
    description: "GET /api/v1/posts?size=20 (newest page)",
    workload: (f) => ({
      connections: f.connections,
      // Built per request like list-deep's, so that the two differ only in the server's work:
      // a static request costs autocannon, on the same two cores, less than a varying one.
      request: varying("GET", () => ({ path: "/api/v1/posts?size=20" })),
    }),
  },
  {
    name: "list-deep",
    description: "GET /api/v1/posts?size=20&cursor=<the last full page>",
    workload: (f) => ({
      connections: f.connections,
      request: varying("GET", () => ({ path: `/api/v1/posts?size=20&cursor=${DEEP_CURSOR}` })),
    }),
  },
  {
    name: "list-user",
    description: "GET /api/v1/posts?size=20&userId=<random user>",
    workload: (f) => ({
      connections: f.connections,
      request: varying("GET", () => ({ path: `/api/v1/posts?size=20&userId=${pick(f.users)}` })),
    }),
  },
  {
    name: "list-cold",
    description: `GET /api/v1/posts?size=20&cursor=<one of ${COLD_PAGES} pages, at random>`,
    workload: (f) => {
      // Pages that do not overlap, spread over the whole listing: page k holds the posts
      // 20k down to 20k - 19. Almost every request reads posts no recent request read, so what
      // a server (or PostgreSQL) keeps of recent pages hardly helps. The cursors are made
      // beforehand, so that the client's work per request is list-deep's.
      const pages = Math.min(COLD_PAGES, Math.floor((f.posts - 1) / 20));
      const cursors = Array.from({ length: pages }, (_, k) => encodeCursor(20 * (k + 1) + 1));
      return {
        connections: f.connections,
        request: varying("GET", () => ({
          path: `/api/v1/posts?size=20&cursor=${cursors[pick(pages) - 1]}`,
        })),
      };
    },
  },
  {
    name: "create",
    description: "POST /api/v1/posts as a random user",
    workload: (f) => {
      const body = JSON.stringify({
        title: "Benchmark post",
        content: "Written by the benchmark. ".repeat(12),
      });
      return {
        connections: f.connections,
        request: varying("POST", () => ({
          path: "/api/v1/posts",
          headers: { ...JSON_HEADERS, "x-auth-token": f.tokens[pick(f.users) - 1] as string },
          body,
        })),
      };
    },
  },
  {
    name: "patch",
    description: "PATCH /api/v1/posts/<a seeded post of the token's user> {title}",
    workload: (f) => ({
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
    }),
  },
  {
    name: "login",
    description: "POST /api/v1/user/login as a random user, beside a steady trickle of GET one post",
    workload: (f) => ({
      connections: f.loginConnections,
      request: varying("POST", () => ({
        path: "/api/v1/user/login",
        headers: JSON_HEADERS,
        body: JSON.stringify({ email: seedEmail(pick(f.users)), password: SEED_PASSWORD }),
      })),
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
