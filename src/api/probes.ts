import { z } from "@hono/zod-openapi";
import type { Api } from "../http/deps.ts";

const requestId = { "X-Request-Id": { $ref: "#/components/headers/RequestId" } };
const health = z.object({ status: z.literal("ok"), version: z.string() }).openapi("Health");
const readiness = z
  .object({ status: z.enum(["ready", "not_ready"]), checks: z.record(z.string(), z.string()) })
  .openapi("Readiness");

/**
 * The OpenAPI entries of the probes that createHttpApp serves by hand (outside `/v1`, no envelope,
 * no credential: the host's supervisor and Prometheus call them).
 */
export function registerProbeDocs(app: Api) {
  const probe = (path: string, operationId: string, summary: string, responses: Record<number, object>) =>
    app.openAPIRegistry.registerPath({
      method: "get",
      path,
      operationId,
      summary,
      tags: ["Operations"],
      security: [],
      responses,
    } as never);
  probe("/healthz", "healthz", "Liveness: the process answers", {
    200: { description: "Alive", headers: requestId, content: { "application/json": { schema: health } } },
  });
  probe("/readyz", "readyz", "Readiness: the store answers and the server is not shutting down", {
    200: { description: "Ready", headers: requestId, content: { "application/json": { schema: readiness } } },
    503: {
      description: "Not ready (see checks)",
      headers: requestId,
      content: { "application/json": { schema: readiness } },
    },
  });
  probe("/metrics", "metrics", "Prometheus metrics (text exposition format 0.0.4)", {
    200: {
      description: "Metrics",
      headers: requestId,
      content: { "text/plain; version=0.0.4": { schema: z.string() } },
    },
  });
}
