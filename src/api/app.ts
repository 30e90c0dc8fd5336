import { OpenAPIHono } from "@hono/zod-openapi";
import { newId } from "../core/ids.ts";
import type { Logger } from "../core/logger.ts";
import { zodIssuesToValidation } from "../core/validate.ts";
import type { Metrics } from "../observability/metrics.ts";
import { registerApiKeyRoutes } from "./api-keys.ts";
import { registerAuthRoutes } from "./auth.ts";
import { registerUserRoutes } from "./users.ts";
import { registerSystemRoutes } from "./system.ts";
import { registerCollectionRoutes } from "./collections.ts";
import { registerUploadRoutes } from "./upload.ts";
import { registerVideoExportRoutes } from "./video-exports.ts";
import { registerVideoRoutes } from "./videos.ts";
import { registerJobRoutes } from "./jobs.ts";
import { registerSearchRoutes } from "./search.ts";
import { registerMediaRoutes } from "./media-serving.ts";
import { registerWebhookRoutes } from "./webhooks.ts";
import { registerAgentRoutes } from "./agent.ts";
import { registerMcpRoutes } from "./mcp.ts";
import { registerDashboardRoutes } from "./dashboard.ts";
import type { HttpDeps } from "../http/deps.ts";
import { handleError, notFoundHandler, validationResponse } from "../http/errors.ts";
import { clientAddress, corsFor, declaredBodyLimit, methodMatcher, methodNotAllowed } from "../http/guards.ts";
import type { AppEnv } from "../http/types.ts";
import { insufficientStorage, isIoError, isStorageError } from "../core/storage.ts";
import { RESPONSE_HEADERS } from "../http/route.ts";
import { registerProbeDocs } from "./probes.ts";
import { linkOrigin, type LinkOriginScope } from "../http/link-origin.ts";

export interface HttpAppOptions extends HttpDeps {
  logger: Logger;
  metrics: Metrics;
  version: string;
  /** Readiness: the store answers and the server is not shutting down. */
  ready: () => Promise<{ ok: boolean; checks: Record<string, string> }>;
  /** Told when a request failed for lack of disk space (so /readyz reports it). */
  storage?: { noteFull(): void; isFull(): boolean };
  /** Where the links of a request are built from (its origin; http/link-origin.ts). */
  links?: LinkOriginScope;
}

/**
 * Every HTTP route module, in registration order: the one list a new module is added to.
 * Order matters only where paths overlap (Hono matches in registration order).
 */
export const ROUTE_MODULES: ((app: OpenAPIHono<AppEnv>, deps: HttpDeps) => void)[] = [
  registerAuthRoutes,
  registerUserRoutes,
  registerSystemRoutes,
  registerApiKeyRoutes,
  registerCollectionRoutes,
  registerUploadRoutes,
  registerVideoRoutes,
  registerVideoExportRoutes,
  registerJobRoutes,
  registerSearchRoutes,
  registerMediaRoutes,
  registerWebhookRoutes,
  registerAgentRoutes,
  registerMcpRoutes,
  registerDashboardRoutes,
];

const TARGET_ROOT: Record<string, string> = {
  json: "body",
  form: "body",
  query: "query",
  param: "path",
  header: "header",
};

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function createHttpApp(opts: HttpAppOptions): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    // One validation shape for every route: FastAPI's 422 `detail[]`.
    defaultHook: (result, c) => {
      if (!result.success) {
        return validationResponse(
          c as never,
          zodIssuesToValidation(
            result.error.issues,
            (result as { data?: unknown }).data,
            TARGET_ROOT[result.target] ?? result.target,
          ),
        );
      }
    },
  });

  app.use("*", async (c, next) => {
    const startedAt = performance.now();
    const incoming = c.req.header("x-request-id");
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : newId("req");
    c.set("requestId", requestId);
    c.set("startedAt", startedAt);
    c.set("log", opts.logger.child({ request_id: requestId }));
    await next();
    c.res.headers.set("X-Request-Id", requestId);
    // Never let a browser guess a type (a JSON answer sniffed as HTML); never let a cache keep
    // what a credential read (an answer for one key must not be served to another).
    c.res.headers.set("X-Content-Type-Options", "nosniff");
    if (
      (c.get("principal") || c.req.header("authorization")) &&
      /json/i.test(c.res.headers.get("content-type") ?? "") &&
      !c.res.headers.has("cache-control")
    )
      c.res.headers.set("Cache-Control", "no-store");
    const seconds = (performance.now() - startedAt) / 1000;
    const route = c.req.routePath || "unmatched";
    opts.metrics.observeRequest(route, c.req.method, c.res.status, seconds);
    c.get("log").info("request", {
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      route,
      status: c.res.status,
      took_ms: Math.round(seconds * 1e5) / 100,
    });
  });

  app.use("*", clientAddress(opts.config.trustedProxies));
  if (opts.links) app.use("*", linkOrigin(opts.links, opts.config));
  app.use("*", declaredBodyLimit(opts.config));
  const corsMw = corsFor(opts.config.corsOrigins);
  if (corsMw) app.use("*", corsMw);

  app.onError((err, c) => {
    if (isStorageError(err)) opts.storage?.noteFull();
    // SQLite reports some writes on a full disk as a generic I/O error (e.g. growing the WAL index).
    else if (isIoError(err) && opts.storage?.isFull()) return handleError(insufficientStorage(), c);
    return handleError(err, c);
  });
  const allowedMethods = methodMatcher(() => app.routes);
  app.notFound((c) => {
    const allow = allowedMethods(c.req.method, c.req.path);
    return allow ? methodNotAllowed(c, allow) : notFoundHandler(c);
  });

  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", {
    type: "http",
    scheme: "bearer",
    description: "API key `vsk_…` (create one with `vsearch keys create` or POST /v1/api_keys)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "sessionToken", {
    type: "http",
    scheme: "bearer",
    description: "Session token from POST /v1/auth/sessions",
  });
  for (const [name, header] of Object.entries(RESPONSE_HEADERS))
    app.openAPIRegistry.registerComponent("headers", name, header);

  registerProbeDocs(app);
  app.get("/healthz", (c) => c.json({ status: "ok", version: opts.version }));
  app.get("/readyz", async (c) => {
    const r = await opts.ready();
    return c.json({ status: r.ok ? "ready" : "not_ready", checks: r.checks }, r.ok ? 200 : 503);
  });
  app.get("/metrics", async (c) =>
    c.text(await opts.metrics.render(), 200, { "Content-Type": "text/plain; version=0.0.4" }),
  );

  for (const register of ROUTE_MODULES) register(app, opts);

  app.doc31("/v1/openapi.json", {
    openapi: "3.1.0",
    // Relative: the document is served by the appliance it describes, wherever that is reached.
    servers: [{ url: "/", description: "This vsearch appliance" }],
    info: {
      title: "vsearch",
      version: opts.version,
      license: { name: "Apache-2.0", url: "https://www.apache.org/licenses/LICENSE-2.0" },
      description:
        "Self-hosted video search. Every success is `{data, meta}`; validation errors are 422 `{detail: [...]}`; other errors `{detail: {code, message}}`.",
    },
  });
  return app;
}
