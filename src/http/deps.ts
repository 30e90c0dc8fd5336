import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Config } from "../config/config.ts";
import type { AuthService } from "../auth/service.ts";
import type { Services } from "../services.ts";
import type { RateLimits } from "./rate-limit.ts";
import type { AppEnv } from "./types.ts";

/** What route modules get: the services to call and the shared HTTP machinery. */
export interface HttpDeps {
  config: Config;
  auth: AuthService;
  limiter: RateLimits;
  services: Services;
}

export type Api = OpenAPIHono<AppEnv>;
