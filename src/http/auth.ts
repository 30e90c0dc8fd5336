import type { MiddlewareHandler } from "hono";
import type { Access } from "../auth/schema.ts";
import type { AuthService } from "../auth/service.ts";
import { AppError } from "../core/errors.ts";
import type { AppEnv } from "./types.ts";

/**
 * Enforces a route's declared access level. The rule lives here once; routes only declare
 * `access`, they never check credentials themselves.
 */
export function authorize(
  auth: AuthService,
  access: Access,
  opts: { beforePasswordChange?: boolean } = {},
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (access === "public") return next();
    const principal = await auth.authenticate(c.req.header("authorization"));
    c.set("principal", principal);
    c.set("log", c.get("log").child({ account_id: principal.accountId }));
    // A one-time password's session may only choose a new password, see who it is, or sign out.
    if (principal.kind === "session" && principal.mustChangePassword && !opts.beforePasswordChange)
      throw new AppError(
        "PASSWORD_CHANGE_REQUIRED",
        "You signed in with a one-time password: choose your own first (PUT /v1/auth/password)",
      );
    if (access === "session" && principal.kind !== "session")
      throw new AppError("FORBIDDEN", "This route is for a signed-in user's session token, not an API key");
    if (access === "admin_session") {
      if (principal.kind !== "session") {
        throw new AppError(
          "FORBIDDEN",
          "API keys cannot manage API keys or users; sign in and use an admin session token",
        );
      }
      if (principal.role !== "admin")
        throw new AppError("FORBIDDEN", "Managing API keys, webhooks and users needs the admin role");
    }
    if (access === "all" && principal.kind === "api_key" && principal.permissions !== "all") {
      throw new AppError("FORBIDDEN", "This API key is read_only; it may search, list and get, not write");
    }
    return next();
  };
}
