import type { MiddlewareHandler } from "hono";
import { LRUCache } from "lru-cache";
import type { RateGroup } from "../config/config.ts";
import { AppError } from "../core/errors.ts";
import type { Principal } from "../auth/schema.ts";
import type { AppEnv } from "./types.ts";

export interface RateResult {
  limit: number;
  remaining: number;
  resetSecs: number;
  allowed: boolean;
}

/**
 * What the HTTP layer counts requests with: fixed one-minute windows per (group, who). In memory
 * (`RateLimiter`) on the embedded store, whose one server process serves the API; in the database
 * (`DbRateLimiter`, http/rate-windows.ts) on PostgreSQL, so that every server behind a load
 * balancer counts against the same windows (issue 26).
 */
export interface RateLimits {
  /**
   * Counts `n` requests (1; a JSON-RPC batch counts every message) if all of them fit in the
   * window; otherwise counts none and says not allowed. `n` 0: whether one more would fit.
   */
  take(group: RateGroup, who: string, n: number): Promise<RateResult>;
  /** Takes back one counted request (a sign-in that succeeded is not a guess). */
  refund(group: RateGroup, who: string): Promise<void>;
}

/** The window's answer, given its count after this request and when it started. */
export function rateResult(limit: number, count: number, start: number, allowed: boolean, t: number, windowMs: number) {
  const resetSecs = Math.max(1, Math.ceil((start + windowMs - t) / 1000));
  return { limit, remaining: Math.max(0, limit - count), resetSecs, allowed };
}

/**
 * Fixed one-minute windows per (group, who), in this process's memory (the embedded store).
 *
 * Bounded at any number of clients: counters live in an LRU of `maxClients` entries, so each hit
 * is O(1) and memory is capped (~150 B a counter). The previous table swept itself in full on
 * every new client past 100 k (throughput fell from ~10 k to ~550 req/s). Dropping the least
 * recently used counter can only forget a client that has been quiet longer than every one of
 * `maxClients` others; escaping a limit that way takes that many distinct addresses a minute
 * (IPv6 counts per /64, see http/client-address.ts).
 */
export class RateLimiter implements RateLimits {
  private readonly windows: LRUCache<string, { start: number; count: number }>;

  constructor(
    private readonly limits: Record<RateGroup, number>,
    private readonly now: () => number = Date.now,
    opts: { windowMs?: number; maxClients?: number } = {},
  ) {
    this.windowMs = opts.windowMs ?? 60_000;
    this.windows = new LRUCache({ max: opts.maxClients ?? 500_000 });
  }

  private readonly windowMs: number;

  /** Counts one request and says whether it is within the limit. */
  hit(group: RateGroup, who: string): RateResult {
    return this.count(group, who, 1);
  }

  async take(group: RateGroup, who: string, n: number): Promise<RateResult> {
    return this.count(group, who, n);
  }

  /** Takes back one counted request (a sign-in that succeeded is not a guess). */
  async refund(group: RateGroup, who: string): Promise<void> {
    const w = this.windows.get(`${group}\u0000${who}`);
    if (w && w.count > 0 && this.now() - w.start < this.windowMs) w.count--;
  }

  get size(): number {
    return this.windows.size;
  }

  private count(group: RateGroup, who: string, n: number): RateResult {
    const limit = this.limits[group];
    const t = this.now();
    const key = `${group}\u0000${who}`;
    let w = this.windows.get(key);
    if (!w || t - w.start >= this.windowMs) {
      w = { start: t, count: 0 };
      if (n > 0) this.windows.set(key, w);
    }
    const allowed = w.count + Math.max(1, n) <= limit;
    if (allowed) w.count += n;
    return rateResult(limit, w.count, w.start, allowed, t, this.windowMs);
  }
}

/**
 * Who a credential is counted as: an API key by itself; a session by its user, so opening more
 * sessions buys no more requests.
 */
export const principalKey = (p: Principal): string => (p.kind === "api_key" ? `key:${p.keyId}` : `user:${p.userId}`);

export const rateHeaders = (r: RateResult) => ({
  "X-RateLimit-Limit": String(r.limit),
  "X-RateLimit-Remaining": String(r.remaining),
  "X-RateLimit-Reset": String(r.resetSecs),
});

export function rateExceeded(
  r: RateResult,
  message = `Rate limit of ${r.limit} requests per minute exceeded; retry in ${r.resetSecs} s`,
) {
  return new AppError("RATE_LIMIT_EXCEEDED", message, { ...rateHeaders(r), "Retry-After": String(r.resetSecs) });
}

/** Per API key or per signed-in user (SPEC §8); anonymous callers per client address. Runs after authentication. */
export function rateLimit(limiter: RateLimits, group: RateGroup): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const p = c.get("principal");
    const who = p ? principalKey(p) : `ip:${c.get("clientAddress")}`;
    const r = await limiter.take(group, who, 1);
    if (!r.allowed) throw rateExceeded(r);
    await next();
    for (const [k, v] of Object.entries(rateHeaders(r))) c.res.headers.set(k, v);
  };
}
