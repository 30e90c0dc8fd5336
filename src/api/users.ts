import { z } from "@hono/zod-openapi";
import { dataResponse, defineRoute, idParam, jsonBody, jsonError, ok } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import {
  changePasswordSchema,
  inviteSchema,
  oneTimePasswordSchema,
  resetSchema,
  roleSchema,
  setupSchema,
  setupStatusSchema,
  userSchema,
} from "../accounts/schema.ts";
import { sessionSchema } from "../auth/schema.ts";

const userId = idParam("user_id", "mbr_4kQ9zT2mX8bV1nR6pL0c");
const notFound = { 404: jsonError("No such user in this account (USER_NOT_FOUND)") };
const lastAdmin = {
  409: jsonError("The account's last admin cannot be removed or made a member (LAST_ADMIN); or EMAIL_TAKEN"),
};

/**
 * People (SPEC §10, issue 22): an admin's session manages the users of their account; every user
 * changes their own password; and the first run in the browser creates the first account and its
 * admin from the setup link `vsearch serve` printed.
 */
export function registerUserRoutes(app: Api, deps: HttpDeps) {
  const users = deps.services.users;
  const admin = { tags: ["Users"], access: "admin_session" as const, rateGroup: "admin" as const };

  app.openapi(
    defineRoute(deps, {
      ...admin,
      method: "get",
      path: "/v1/users",
      operationId: "listUsers",
      summary: "The people who sign in to this account (admins)",
      responses: { 200: dataResponse("Users, oldest first", z.array(userSchema)) },
    }),
    async (c) => ok(c, await users.list(c.get("principal").accountId)),
  );

  app.openapi(
    defineRoute(deps, {
      ...admin,
      method: "post",
      path: "/v1/users",
      operationId: "inviteUser",
      summary: "Invite a user: created with a one-time password (shown once) they must change at first sign-in",
      request: { body: jsonBody(inviteSchema) },
      responses: {
        201: dataResponse("Invited", oneTimePasswordSchema),
        409: jsonError("A user with this e-mail exists (EMAIL_TAKEN)"),
      },
    }),
    async (c) => ok(c, await users.invite(c.get("principal").accountId, c.req.valid("json")), 201),
  );

  app.openapi(
    defineRoute(deps, {
      ...admin,
      method: "patch",
      path: "/v1/users/{user_id}",
      operationId: "setUserRole",
      summary: "Change a user's role (takes effect on their next request)",
      request: { params: userId, body: jsonBody(roleSchema) },
      responses: { 200: dataResponse("The user", userSchema), ...notFound, ...lastAdmin },
    }),
    async (c) =>
      ok(c, await users.setRole(c.get("principal").accountId, c.req.valid("param").user_id, c.req.valid("json"))),
  );

  app.openapi(
    defineRoute(deps, {
      ...admin,
      method: "delete",
      path: "/v1/users/{user_id}",
      operationId: "removeUser",
      summary: "Remove a user; their sessions end at once",
      request: { params: userId },
      responses: { 204: { description: "Removed" }, ...notFound, ...lastAdmin },
    }),
    async (c) => {
      await users.remove(c.get("principal").accountId, c.req.valid("param").user_id);
      return c.body(null, 204);
    },
  );

  app.openapi(
    defineRoute(deps, {
      ...admin,
      method: "post",
      path: "/v1/users/{user_id}/password",
      operationId: "resetUserPassword",
      summary: "Reset a password without e-mail: a one-time password (shown once); the user's sessions end",
      request: { params: userId, body: jsonBody(resetSchema) },
      responses: { 200: dataResponse("The one-time password", oneTimePasswordSchema), ...notFound },
    }),
    async (c) => {
      const r = await users.resetPassword(
        c.get("principal").accountId,
        c.req.valid("param").user_id,
        c.req.valid("json"),
      );
      return ok(c, { user: r.user, one_time_password: r.one_time_password! });
    },
  );

  app.openapi(
    defineRoute(deps, {
      method: "put",
      path: "/v1/auth/password",
      operationId: "changeOwnPassword",
      tags: ["Auth"],
      summary: "Change your own password (also the way out of a one-time password); your other sessions end",
      access: "session",
      rateGroup: "admin",
      beforePasswordChange: true,
      request: { body: jsonBody(changePasswordSchema) },
      responses: {
        200: dataResponse("Changed", z.object({ sessions_ended: z.number().int() })),
        400: jsonError("The same password again (PASSWORD_UNCHANGED)"),
        403: jsonError("The current password is wrong (WRONG_PASSWORD); or an API key, not a session (FORBIDDEN)"),
      },
    }),
    async (c) => ok(c, await deps.auth.changeOwnPassword(c.get("principal"), c.req.valid("json"))),
  );

  // First run. Public by design: there is no account, so no credential, yet; the token of the
  // setup link is the credential, and the status only tells whether setup is still needed.
  const setup = deps.services.setup;
  app.openapi(
    defineRoute(deps, {
      method: "get",
      path: "/v1/setup",
      operationId: "getSetupStatus",
      tags: ["Setup"],
      summary: "Whether this appliance still needs its first account (the setup link's page)",
      access: "public",
      rateGroup: "setup",
      responses: { 200: dataResponse("Setup status", setupStatusSchema) },
    }),
    async (c) => ok(c, { required: await setup.required() }),
  );

  app.openapi(
    defineRoute(deps, {
      method: "post",
      path: "/v1/setup",
      operationId: "completeSetup",
      tags: ["Setup"],
      summary: "Create the first account and its admin with the setup link's token; signs the admin in",
      access: "public",
      // Like a sign-in attempt: an argon2 hash per request, counted per client address.
      rateGroup: "auth_address",
      request: { body: jsonBody(setupSchema) },
      responses: {
        201: dataResponse("The admin's session", sessionSchema),
        403: jsonError("The token is not a setup link's (FORBIDDEN)"),
        404: jsonError("Setup is done: an account exists (NOT_FOUND)"),
      },
    }),
    async (c) => {
      const { user } = await setup.complete(c.req.valid("json"));
      return ok(c, await deps.auth.startSession(user), 201);
    },
  );
}
