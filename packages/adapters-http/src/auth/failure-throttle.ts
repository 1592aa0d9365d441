/// <reference types="@fastify/rate-limit" preserve="true" />
import { createHash } from "node:crypto";
import { normalizeIP } from "@fastify/rate-limit";
import { parseEmail } from "@posts/domain";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { jsonObjectBody } from "../http/json-object-validator-compiler.js";

/** How many failures one key may have in one window before further attempts are refused. */
export interface ThrottleSettings {
  /** Failed logins per email address per window. */
  readonly max: number;
  readonly windowMs: number;
  /**
   * Failed logins, and refused duplicate registrations, per client address per window. Default
   * `5 * max`: many honest users may share one address behind a NAT.
   */
  readonly maxPerAddress?: number;
}

/** Counts failures and refuses attempts once a key has failed too often. */
export interface FailureThrottle {
  /** Seconds until this request may try again, or 0 when it may try now. Counts nothing. */
  waitSeconds(request: FastifyRequest): Promise<number>;
  /** Counts one failure against every key of this request. */
  recordFailure(request: FastifyRequest): Promise<void>;
}

/** The throttles of one app. */
export interface FailureThrottles {
  /** Keyed by client address and by the normalized email of the body. */
  readonly login: FailureThrottle;
  /** Keyed by client address. */
  readonly registration: FailureThrottle;
}

type Limiter = ReturnType<FastifyInstance["createRateLimit"]>;

// The library's default for IPv6: one /64 is one client, who may hold every address in it.
const IPV6_SUBNET = 64;

/**
 * Builds the throttles on @fastify/rate-limit, which must be registered on `app` with the store
 * that keeps the counts (`attemptCounterStore`: fixed windows, in the database, shared by every
 * instance). Only failures count: a user who logs in successfully a hundred times a minute is
 * never refused, and a refused attempt is not counted either, so the wait never grows. The
 * client address is `request.ip`, which honours `trustProxy`; IPv6 addresses count per /64.
 * The email key is only used for a syntactically valid address (a string that cannot be an
 * address names no account, and would make an unbounded key), and holds a SHA-256 digest of the
 * normalized address, never the address itself. Each limiter's keys carry its own prefix, so
 * failed logins and registrations from one address are counted apart.
 */
export function failureThrottles(app: FastifyInstance, settings: ThrottleSettings): FailureThrottles {
  const { max, windowMs } = settings;
  const maxPerAddress = settings.maxPerAddress ?? 5 * max;
  for (const [name, value] of [
    ["max", max],
    ["windowMs", windowMs],
    ["maxPerAddress", maxPerAddress],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new RangeError(`loginThrottle.${name} must be a positive integer`);
  }
  const limiter = (limit: number, keyGenerator: (request: FastifyRequest) => string): Limiter =>
    app.createRateLimit({ max: limit, timeWindow: windowMs, keyGenerator });
  const addressOf = (request: FastifyRequest) => normalizeIP(request.ip, IPV6_SUBNET);

  const loginByEmail = limiter(max, (request) => `login:email:${digest(emailOf(request) ?? "")}`);
  const loginByAddress = limiter(maxPerAddress, (request) => `login:address:${addressOf(request)}`);
  const registrationByAddress = limiter(
    maxPerAddress,
    (request) => `registration:address:${addressOf(request)}`,
  );

  return {
    login: throttle((request) =>
      emailOf(request) === undefined ? [loginByAddress] : [loginByAddress, loginByEmail],
    ),
    registration: throttle(() => [registrationByAddress]),
  };
}

function throttle(limitersOf: (request: FastifyRequest) => readonly Limiter[]): FailureThrottle {
  return {
    async waitSeconds(request) {
      // In parallel: the store answers the reads of one turn with one query.
      const statuses = await Promise.all(
        limitersOf(request).map((limiter) => limiter(request, { increment: false })),
      );
      let wait = 0;
      for (const status of statuses) {
        if (!status.isAllowed && status.remaining === 0) wait = Math.max(wait, status.ttlInSeconds, 1);
      }
      return wait;
    },
    async recordFailure(request) {
      await Promise.all(limitersOf(request).map((limiter) => limiter(request)));
    },
  };
}

function emailOf(request: FastifyRequest): string | undefined {
  return parseEmail(jsonObjectBody(request.body).email);
}

function digest(email: string): string {
  return createHash("sha256").update(email).digest("base64url");
}
