/// <reference types="@fastify/rate-limit" preserve="true" />
import { parseEmail } from "@posts/domain";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { jsonObjectBody } from "../http/json-object-validator-compiler.js";

/** How many failures one key may have in one window before further attempts are refused. */
export interface ThrottleSettings {
  /** Failed logins per email address per window. */
  readonly max: number;
  readonly windowMs: number;
  /**
   * Failed logins, and failed registrations, per client address per window. Default
   * `5 * max`: many honest users may share one address behind a NAT.
   */
  readonly maxPerAddress?: number;
}

/** 10 failed logins per email and 50 per address, per minute. */
export const DEFAULT_LOGIN_THROTTLE: ThrottleSettings = { max: 10, windowMs: 60_000 };

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

/**
 * Builds the throttles on @fastify/rate-limit (registered on `app`, in-memory store, fixed
 * windows). Only failures count: a user who logs in successfully a hundred times a minute is
 * never refused, and a refused attempt is not counted either, so the wait never grows. The
 * client address is `request.ip`, which honours `trustProxy`; IPv6 addresses count per /64.
 * The email key is only used for a syntactically valid address (a string that cannot be an
 * address names no account, and would make an unbounded key).
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
  const limiter = (limit: number, keyGenerator?: (request: FastifyRequest) => string): Limiter =>
    app.createRateLimit({ max: limit, timeWindow: windowMs, ...(keyGenerator ? { keyGenerator } : {}) });

  const byEmail = limiter(max, (request) => `email:${emailOf(request) ?? ""}`);
  const loginByAddress = limiter(maxPerAddress);
  const registrationByAddress = limiter(maxPerAddress);

  return {
    login: throttle((request) =>
      emailOf(request) === undefined ? [loginByAddress] : [loginByAddress, byEmail],
    ),
    registration: throttle(() => [registrationByAddress]),
  };
}

function throttle(limitersOf: (request: FastifyRequest) => readonly Limiter[]): FailureThrottle {
  return {
    async waitSeconds(request) {
      let wait = 0;
      for (const limiter of limitersOf(request)) {
        const status = await limiter(request, { increment: false });
        if (!status.isAllowed && status.remaining === 0) wait = Math.max(wait, status.ttlInSeconds, 1);
      }
      return wait;
    },
    async recordFailure(request) {
      for (const limiter of limitersOf(request)) await limiter(request);
    },
  };
}

function emailOf(request: FastifyRequest): string | undefined {
  return parseEmail(jsonObjectBody(request.body).email);
}
