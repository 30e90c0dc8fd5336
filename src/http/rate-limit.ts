import type { MiddlewareHandler } from "hono";
import type { RateGroup } from "../config/config.ts";
import { AppError } from "../core/errors.ts";
import type { AppEnv } from "./types.ts";

/**
 * Fixed one-minute windows per (group, credential). In memory on purpose: a single appliance
 * process serves the API; a scaled-out deployment would move this next to the shared database.
 */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly limits: Record<RateGroup, number>,
    private readonly now: () => number = Date.now,
    private readonly windowMs = 60_000,
  ) {}

  hit(group: RateGroup, who: string): { limit: number; remaining: number; resetSecs: number; allowed: boolean } {
    const limit = this.limits[group];
    const t = this.now();
    const key = `${group}\u0000${who}`;
    let w = this.windows.get(key);
    if (!w || t - w.start >= this.windowMs) {
      w = { start: t, count: 0 };
      this.windows.set(key, w);
      if (this.windows.size > 100_000) this.sweep(t);
    }
    const allowed = w.count < limit;
    if (allowed) w.count++;
    const resetSecs = Math.max(1, Math.ceil((w.start + this.windowMs - t) / 1000));
    return { limit, remaining: Math.max(0, limit - w.count), resetSecs, allowed };
  }

  private sweep(t: number) {
    for (const [k, w] of this.windows) if (t - w.start >= this.windowMs) this.windows.delete(k);
  }
}

/** Per API key, or per session on session routes (SPEC §8). Runs after authentication. */
export function rateLimit(limiter: RateLimiter, group: RateGroup): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const p = c.get("principal");
    const who = p ? (p.kind === "api_key" ? p.keyId : p.sessionId) : `ip:${c.req.header("x-forwarded-for") ?? "local"}`;
    const r = limiter.hit(group, who);
    const headers = {
      "X-RateLimit-Limit": String(r.limit),
      "X-RateLimit-Remaining": String(r.remaining),
      "X-RateLimit-Reset": String(r.resetSecs),
    };
    if (!r.allowed) {
      throw new AppError(429, "RATE_LIMIT_EXCEEDED", `Rate limit of ${r.limit} requests per minute exceeded; retry in ${r.resetSecs} s`, {
        ...headers,
        "Retry-After": String(r.resetSecs),
      });
    }
    await next();
    for (const [k, v] of Object.entries(headers)) c.res.headers.set(k, v);
  };
}
