/**
 * Every operation of the served OpenAPI document through the route battery
 * (test/helpers/route-battery.ts): a route added tomorrow is covered the day it is added, and
 * fails here if it lacks authentication, a limiter, tenant scoping or the 422 shape.
 */
import { OpenAPIHono, z } from "@hono/zod-openapi";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { RATE_GROUPS } from "../../src/config/config.ts";
import { defineRoute } from "../../src/http/route.ts";
import { handleError } from "../../src/http/errors.ts";
import { RateLimiter } from "../../src/http/rate-limit.ts";
import type { AppEnv } from "../../src/http/types.ts";
import { createTenant, json, startTestApp, type Tenant, type TestApp, upload } from "../helpers/app.ts";
import { scratchDir, smallMp4 } from "../helpers/ffmpeg.ts";
import { type BatteryTarget, type Check, CHECKS, type Exception, runBattery } from "../helpers/route-battery.ts";
import { until } from "../helpers/wait.ts";

/**
 * The only operations left out of some checks. Each needs a reason a reviewer accepts; a new
 * route belongs here only if it is public by design or not a write despite its method.
 */
const EXCEPTIONS: Exception[] = [
  {
    method: "post",
    path: "/v1/auth/sessions",
    skip: ["unauthenticated", "revoked", "read_only"],
    reason: "sign-in is how a credential is obtained: public by design, limited per client address",
  },
  {
    method: "delete",
    path: "/v1/auth/sessions/current",
    skip: ["read_only", "rate_limit"],
    reason: "ending one's own session is allowed to every credential; not rate limited (SPEC §8 names no group for it)",
  },
  {
    method: "get",
    path: "/v1/auth/whoami",
    skip: ["rate_limit"],
    reason: "describes the caller's own credential; SPEC §8 names no group for it",
  },
  {
    method: "get",
    path: "/v1/agent/schema.json",
    skip: ["unauthenticated", "revoked", "rate_limit"],
    reason: "the tools' JSON Schema, the same for everyone (no tenant data): agents read it before they hold a key",
  },
  {
    method: "post",
    path: "/v1/agent/call",
    skip: ["read_only"],
    reason:
      "permission is per tool: read tools (search_videos, the battery's sample) are open to read_only keys, write tools answer 403 (test/agent)",
  },
  {
    method: "post",
    path: "/v1/mcp",
    skip: ["read_only", "rate_limit", "validation"],
    reason:
      "MCP (JSON-RPC): permission and the agent limit apply per tools/call, the handshake is free; bad input is a JSON-RPC error by the protocol, not a 422 (test/agent)",
  },
  {
    method: "post",
    path: "/v1/search",
    skip: ["read_only"],
    reason: "searching is a read (SPEC §4: read_only keys search); POST only for the form body",
  },
  {
    method: "post",
    path: "/v1/search/feedback",
    skip: ["read_only"],
    reason: "feedback is part of searching; read_only keys may give it (SPEC §5)",
  },
  {
    method: "delete",
    path: "/v1/search/feedback",
    skip: ["read_only"],
    reason: "takes back a read_only caller's own feedback",
  },
  ...["get", "post"].map((method) => ({
    method,
    path: "/v1/setup",
    skip: ["unauthenticated", "revoked", "read_only"] as const,
    reason:
      "first run (SPEC §10): there is no account, hence no credential, yet — the setup link's token is the credential, and the status says only whether setup is needed; limited per client address",
  })),
  ...[
    "/media/videos/{video_id}/source",
    "/media/videos/{video_id}/poster.jpg",
    "/media/videos/{video_id}/shots/{file}",
    "/media/videos/{video_id}/web.mp4",
    "/media/videos/{video_id}/clips/{file}",
  ].map((path) => ({
    method: "get",
    path,
    skip: ["unauthenticated", "revoked", "read_only", "foreign_id", "rate_limit"] as const,
    reason: "presigned media (SPEC §6): the signature is the credential and names the video; players fetch many ranges",
  })),
  ...["/healthz", "/readyz", "/metrics"].map((path) => ({
    method: "get",
    path,
    skip: ["unauthenticated", "revoked", "read_only", "rate_limit"] as const,
    reason: "probes for the host's supervisor and Prometheus: public, cheap, no tenant data",
  })),
];

describe("route battery", () => {
  let t: TestApp;
  let limited: TestApp;
  let a: Tenant;
  let b: Tenant;
  let target: BatteryTarget;

  beforeAll(async () => {
    const env = { VSEARCH_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8" };
    t = await startTestApp(env);
    // The same app with every limit at 1 per minute: the second request of a credential is a 429.
    limited = await startTestApp({
      ...env,
      ...Object.fromEntries(RATE_GROUPS.map((g) => [`VSEARCH_RATE_LIMIT_${g.toUpperCase()}`, "1"])),
    });
    [a, b] = await Promise.all([createTenant(t, "A"), createTenant(t, "B")]);

    // B's real resources, made the way a client makes them.
    const col = (await json(await t.request("POST", "/v1/collections", { token: b.key, json: { name: "b" } }))).data.id;
    const up = (await json(await upload(t, b, col, await smallMp4(scratchDir("battery"))))).data;
    const wh = (
      await json(
        await t.request("POST", "/v1/webhooks", {
          token: b.key,
          json: { url: "http://127.0.0.1:9/hook", events: ["webhook.ping"] },
        }),
      )
    ).data;
    const keyId = (await json(await t.request("GET", "/v1/api_keys", { token: b.adminToken }))).data[0].id;
    // A delivery: the dispatcher attempts the ping (the target refuses) and records it.
    await t.app.start();
    expect((await t.request("POST", `/v1/webhooks/${wh.id}/test`, { token: b.key })).status).toBe(202);
    let deliveryId = "";
    expect(
      await until(
        async () =>
          !!(deliveryId = (await json(await t.request("GET", `/v1/webhooks/${wh.id}/deliveries`, { token: b.key })))
            .data[0]?.id),
        20_000,
        50,
      ),
    ).toBe(true);
    const revoked = await t.app.services.apiKeys.create(a.accountId, { name: "gone", permissions: "all" });
    await t.app.services.apiKeys.revoke(a.accountId, revoked.id);
    expect([col, up.video_id, up.job_id, wh.id, keyId].every((id) => typeof id === "string")).toBe(true);

    const la = await createTenant(limited, "L");
    target = {
      fetch: (req) => t.app.fetch(req),
      doc: await json(await t.request("GET", "/v1/openapi.json")),
      caller: { key: a.key, readOnlyKey: a.readOnlyKey, adminToken: a.adminToken, revokedKey: revoked.key },
      foreignIds: {
        collection_id: col,
        video_id: up.video_id,
        job_id: up.job_id,
        webhook_id: wh.id,
        key_id: keyId,
        delivery_id: deliveryId,
        user_id: (await t.app.services.users.list(b.accountId)).find((u) => u.role === "member")!.id,
      },
      exceptions: EXCEPTIONS,
      // Session routes are limited per user: a fresh session is a fresh user's.
      freshCredential: async (kind) =>
        kind === "session"
          ? (await createTenant(limited, "S")).adminToken
          : (await limited.app.services.apiKeys.create(la.accountId, { name: "fresh", permissions: "all" })).key,
    };
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await limited?.close();
  });

  test("the document is one a generated client can live with", () => {
    const doc = target.doc;
    const ops = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
      Object.entries<any>(item).map(([method, op]) => ({ path, method, op })),
    );
    expect(ops.length).toBeGreaterThanOrEqual(34);
    expect(doc.servers).toEqual([{ url: "/", description: expect.any(String) }]);
    expect(doc.info.license).toEqual({ name: "Apache-2.0", url: expect.stringMatching(/^https:/) });
    const ids = ops.map((o) => o.op.operationId);
    expect(ids.every((id) => typeof id === "string" && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, method, op } of ops) {
      for (const [status, r] of Object.entries<any>(op.responses)) {
        expect(r.headers?.["X-Request-Id"], `${method} ${path} ${status}`).toEqual({
          $ref: "#/components/headers/RequestId",
        });
        if (status === "429") expect(r.headers["Retry-After"], `${method} ${path}`).toBeDefined();
      }
      if (op.responses["429"])
        expect(
          op.responses["200"] ?? op.responses["201"] ?? op.responses["202"] ?? op.responses["204"],
          `${method} ${path}`,
        ).toMatchObject({ headers: { "X-RateLimit-Limit": expect.anything() } });
      if (op.requestBody && !path.startsWith("/v1/upload"))
        expect(op.responses["413"], `${method} ${path}`).toBeDefined();
    }
    expect(Object.keys(doc.components.headers).sort()).toEqual([
      "RateLimitLimit",
      "RateLimitRemaining",
      "RateLimitReset",
      "RequestId",
      "RetryAfter",
    ]);
    const upload = doc.paths["/v1/upload"].post.requestBody.content["multipart/form-data"].schema;
    expect(upload.required).toEqual(["file", "collection_id"]);
    const search = doc.paths["/v1/search"].post.requestBody.content;
    expect(search["multipart/form-data"].encoding).toMatchObject({
      modes: { explode: true },
      labels: { explode: true },
      image: { contentType: "image/jpeg, image/png" },
    });
    expect(search["application/x-www-form-urlencoded"].encoding).toMatchObject({
      modes: { style: "form", explode: true },
    });
    expect(Object.keys(doc.paths["/media/videos/{video_id}/source"].get.responses["200"].content)).toEqual(
      expect.arrayContaining(["video/mp4", "video/webm", "video/quicktime", "video/mp2t"]),
    );
    expect(doc.paths["/readyz"].get.responses["503"]).toBeDefined();
  });

  test("every operation: 401 anonymous and revoked, 403 read_only on writes and API keys on session routes, 404 across accounts, 422 shape", async () => {
    expect(
      await runBattery(
        target,
        CHECKS.filter((c) => c !== "rate_limit"),
      ),
    ).toEqual([]);
  });

  test("every operation: 429 one past the limit, with Retry-After and X-RateLimit-*", async () => {
    expect(await runBattery({ ...target, fetch: (req) => limited.app.fetch(req) }, ["rate_limit"])).toEqual([]);
  });

  test("every exception names an operation that exists (no stale entries)", () => {
    for (const e of EXCEPTIONS) expect(target.doc.paths[e.path]?.[e.method], `${e.method} ${e.path}`).toBeDefined();
  });
});

describe("the battery itself fails on a route that breaks the rules", () => {
  let t: TestApp;
  let a: Tenant;
  beforeAll(async () => {
    t = await startTestApp();
    a = await createTenant(t, "A");
  });
  afterAll(() => t?.close());

  /**
   * A tiny app from the real HTTP kit holding one synthetic route, declared by `spec`. Each run
   * builds it afresh: limits of 1 for the rate_limit check, roomy ones for the others.
   */
  function synthetic(
    spec: { access: "public" | "read_only" | "all"; rateGroup?: "videos" },
    handler: "scoped" | "unscoped" | "teapot" = "scoped",
  ) {
    return async (only: readonly Check[]) => {
      const limit = only.includes("rate_limit") ? 1 : 1000;
      const deps = {
        config: t.config,
        auth: t.app.services.auth,
        limiter: new RateLimiter({ ...t.config.rateLimits, videos: limit }),
        services: t.app.services,
      };
      const api = new OpenAPIHono<AppEnv>({
        defaultHook: (r, c) =>
          r.success ? undefined : c.json({ detail: [{ loc: ["body"], msg: "bad", type: "value_error" }] }, 422),
      });
      api.onError(handleError);
      api.use("*", async (c, next) => {
        c.set("log", t.app.logger);
        await next();
      });
      api.openapi(
        defineRoute(deps, {
          method: "post",
          path: "/v1/widgets/{widget_id}",
          ...spec,
          request: {
            params: z.object({ widget_id: z.string().openapi({ param: { name: "widget_id", in: "path" } }) }),
            body: { required: true, content: { "application/json": { schema: z.object({ name: z.string() }) } } },
          },
          responses: { 200: { description: "ok" }, 404: { description: "not yours" } },
        } as never) as never,
        ((c: any) => {
          if (handler === "unscoped" || c.req.param("widget_id") !== "wdg_of_b") return c.json({ data: null });
          return c.json(
            { detail: { code: handler === "teapot" ? "TEAPOT" : "NOT_FOUND", message: "no" } },
            handler === "teapot" ? 418 : 404,
          );
        }) as never,
      );
      const revoked = await t.app.services.apiKeys.create(a.accountId, { name: "r", permissions: "all" });
      await t.app.services.apiKeys.revoke(a.accountId, revoked.id);
      return runBattery(
        {
          fetch: (req) => api.fetch(req),
          doc: api.getOpenAPI31Document({ openapi: "3.1.0", info: { title: "t", version: "0" } }),
          caller: { key: a.key, readOnlyKey: a.readOnlyKey, adminToken: a.adminToken, revokedKey: revoked.key },
          foreignIds: { widget_id: "wdg_of_b" },
          exceptions: [],
          freshCredential: async () =>
            (await t.app.services.apiKeys.create(a.accountId, { name: "f", permissions: "all" })).key,
        },
        only,
      );
    };
  }

  test("a route that follows the rules passes", async () => {
    const rules = synthetic({ access: "all", rateGroup: "videos" });
    expect(await rules(CHECKS.filter((c) => c !== "rate_limit"))).toEqual([]);
    expect(await rules(["rate_limit"])).toEqual([]);
  });
  test("a route without authentication fails 401 and read_only", async () => {
    const failures = await synthetic({ access: "public", rateGroup: "videos" })([
      "unauthenticated",
      "revoked",
      "read_only",
    ]);
    expect(failures).toEqual([
      expect.stringMatching(/^POST \/v1\/widgets\/\{widget_id\} \[unauthenticated\]: expected 401, got 4\d\d/),
      expect.stringMatching(/\[revoked\]: expected 401/),
      expect.stringMatching(/\[read_only\]: expected 403/),
    ]);
  });

  test("a write open to read_only keys fails read_only", async () => {
    expect(await synthetic({ access: "read_only", rateGroup: "videos" })(["read_only"])).toEqual([
      expect.stringMatching(/\[read_only\]: expected 403, got 404/),
    ]);
  });

  test("a route without a limiter fails rate_limit", async () => {
    const failures = await synthetic({ access: "all" })(["rate_limit"]);
    expect(failures).toContainEqual(expect.stringMatching(/\[rate_limit\]: no X-RateLimit-Limit header/));
    expect(failures).toContainEqual(expect.stringMatching(/\[rate_limit\]: expected 429, got 404/));
  });

  test("a route that serves another account's id fails foreign_id", async () => {
    expect(await synthetic({ access: "all", rateGroup: "videos" }, "unscoped")(["foreign_id"])).toEqual([
      expect.stringMatching(/\[foreign_id\]: expected 404, got 200/),
    ]);
  });

  test("a status the document does not list fails", async () => {
    expect(await synthetic({ access: "all", rateGroup: "videos" }, "teapot")(["foreign_id"])).toEqual([
      expect.stringMatching(/\[foreign_id\]: answered 418, which the document does not list/),
      expect.stringMatching(/\[foreign_id\]: expected 404, got 418/),
    ]);
  });
});
