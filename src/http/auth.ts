import type { MiddlewareHandler } from "hono";
import type { Access } from "../auth/schema.ts";
import type { AuthService } from "../auth/service.ts";
import { AppError } from "../core/errors.ts";
import type { AppEnv } from "./types.ts";

/**
 * Enforces a route's declared access level. The rule lives here once; routes only declare
 * `access`, they never check credentials themselves.
 */
export function authorize(auth: AuthService, access: Access): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (access === "public") return next();
    const principal = auth.authenticate(c.req.header("authorization"));
    c.set("principal", principal);
    c.set("log", c.get("log").child({ account_id: principal.accountId }));
    if (access === "admin_session") {
      if (principal.kind !== "session") {
        throw new AppError("FORBIDDEN", "API keys cannot manage API keys; sign in and use an admin session token");
      }
      if (principal.role !== "admin") throw new AppError("FORBIDDEN", "Managing API keys needs the admin role");
    }
    if (access === "all" && principal.kind === "api_key" && principal.permissions !== "all") {
      throw new AppError("FORBIDDEN", "This API key is read_only; it may search, list and get, not write");
    }
    return next();
  };
}
