import { z } from "@hono/zod-openapi";
import { dataResponse, defineRoute, jsonError, ok, RETRY_AFTER_HEADER } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { VIDEO_STATUSES } from "../videos/schema.ts";

const accepted = z
  .object({
    job_id: z.string().nullable().openapi({ description: "The indexing job (for a duplicate: its newest one)" }),
    video_id: z.string(),
    status: z.enum(VIDEO_STATUSES).openapi({ description: "`queued` for a new video; a duplicate's own status" }),
    duplicate: z.boolean().openapi({
      description:
        "The collection already held a byte-identical file: this is that video, not a new one (re-indexed with `force=true`)",
    }),
  })
  .openapi("UploadAccepted");

export function registerUploadRoutes(app: Api, deps: HttpDeps) {
  const route = defineRoute(deps, {
    method: "post",
    path: "/v1/upload",
    operationId: "uploadVideo",
    tags: ["Videos"],
    summary: "Upload a video (multipart `file` + `collection_id`); indexing runs as a job",
    description:
      "The body is streamed to disk and never held in memory. The container is sniffed with ffprobe: MP4, MOV, AVI, WebM, MPEG and MKV are accepted. A file the collection already holds (the same bytes) is not indexed twice: the answer is that video with `duplicate: true` (200); `force=true` re-indexes it (202).",
    access: "all",
    rateGroup: "upload",
    maxBody: "stream",
    request: {
      body: {
        required: true,
        content: {
          // Documented only: the streaming reader in UploadService parses this body itself.
          "multipart/form-data": {
            schema: z.object({
              // `format: binary` (OpenAPI 3.0 generators) and `contentMediaType` (3.1): a Blob/File, not a string.
              file: z.string().openapi({
                format: "binary",
                description: "The video; streamed to disk",
                ...({ contentMediaType: "application/octet-stream" } as object),
              }),
              collection_id: z.string(),
              force: z.enum(["true", "false"]).optional().openapi({
                description: "Re-index the collection's video with the same bytes instead of answering it",
              }),
            }),
          },
        },
      },
    },
    responses: {
      202: dataResponse("Accepted; poll the job or wait for `job.completed`", accepted),
      200: dataResponse("The collection already holds these bytes: that video (`duplicate: true`)", accepted),
      402: jsonError("Out of credits (INSUFFICIENT_CREDITS)"),
      404: jsonError("No such collection (COLLECTION_NOT_FOUND)"),
      413: jsonError("File over the upload limit (UPLOAD_TOO_LARGE)"),
      415: jsonError(
        "Not a supported video container (UNSUPPORTED_FORMAT), or frames larger than max_video_pixels (VIDEO_TOO_LARGE)",
      ),
      429: jsonError(
        "Rate limit exceeded (RATE_LIMIT_EXCEEDED), or the account already has its cap of videos waiting to be indexed (QUEUE_FULL: `queue_account_max_waiting`, refused before the body is read); see Retry-After",
      ),
      503: {
        ...jsonError(
          "The media's bucket (`s3_bucket`) failed or cannot be reached (MEDIA_STORE_UNAVAILABLE): nothing was stored; see Retry-After",
        ),
        headers: RETRY_AFTER_HEADER,
      },
    },
  });
  // Registered with plain Hono so no validator reads (buffers) the body before the service streams it.
  const { middleware, ...doc } = route;
  app.openAPIRegistry.registerPath(doc as never);
  const [authorize, limit] = middleware;
  app.post("/v1/upload", authorize, limit, async (c) => {
    const len = c.req.header("content-length");
    const result = await deps.services.uploads.upload(c.get("principal").accountId, {
      contentType: c.req.header("content-type") ?? null,
      contentLength: len && /^\d+$/.test(len) ? Number(len) : null,
      body: c.req.raw.body,
    });
    return ok(c, result.answer, result.queued ? 202 : 200);
  });
}
