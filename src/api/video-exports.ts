import { z } from "@hono/zod-openapi";
import { dataResponse, defineRoute, envelopeOf, idParam, jsonError, ok, RETRY_AFTER_HEADER } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { parseDecimal } from "../core/numbers.ts";

const videoId = idParam("video_id", "vid_Qm3x9T0bL2vK7cP5sN1a");
/** Seconds in a query string: an empty value is missing, not 0 (Number("") would be). */
const seconds = (name: string, example: number) =>
  z
    .preprocess((v) => (typeof v === "string" && v.trim() === "" ? undefined : parseDecimal(v)), z.number().finite())
    .openapi({
      type: "number",
      param: { name, in: "query", required: true },
      example,
      description: "Seconds from the start of the video",
    });

const clipSchema = z
  .object({
    url: z.string().openapi({ description: "Presigned URL of the MP4 (H.264 + AAC, faststart); serves byte ranges" }),
    expires_at: z.string(),
    start: z.number(),
    end: z.number(),
  })
  .openapi("ClipExport");

const transcriptSchema = z
  .object({
    video_id: z.string(),
    segments: z.array(z.object({ start: z.number(), end: z.number(), text: z.string() })),
  })
  .openapi("TranscriptExport");

/** Exports of one video (SPEC §11): an MP4 of a span, the transcript as JSON, SRT or WebVTT. */
export function registerVideoExportRoutes(app: Api, deps: HttpDeps) {
  const svc = deps.services.exports;
  const base = { tags: ["Videos"], rateGroup: "videos" as const, access: "read_only" as const, method: "get" as const };

  app.openapi(
    defineRoute(deps, {
      ...base,
      operationId: "exportClip",
      path: "/v1/videos/{video_id}/clip",
      summary: "An MP4 of a span: cut on first request (exact to the frame), cached, presigned",
      request: { params: videoId, query: z.object({ start: seconds("start", 12), end: seconds("end", 18.5) }) },
      responses: {
        200: dataResponse("The clip", clipSchema),
        404: jsonError("No such video in this account (VIDEO_NOT_FOUND)"),
        409: jsonError("The video is not indexed yet (VIDEO_NOT_READY)"),
        422: jsonError("start/end outside the video, end not after start, or longer than clip_max_secs"),
        429: jsonError(
          "Rate limit exceeded, or this account already has 4 clip encodes running or waiting (RATE_LIMIT_EXCEEDED); see Retry-After",
        ),
        503: {
          ...jsonError("Too many clip encodes of all accounts are waiting (SERVER_BUSY); see Retry-After"),
          headers: RETRY_AFTER_HEADER,
        },
      },
    }),
    async (c) => {
      const q = c.req.valid("query");
      // A client that leaves stops its encode, unless another request waits for the same span.
      const { signal } = c.req.raw;
      return ok(
        c,
        await svc.clip(c.get("principal").accountId, c.req.valid("param").video_id, q.start, q.end, { signal }),
      );
    },
  );

  app.openapi(
    defineRoute(deps, {
      ...base,
      operationId: "exportTranscript",
      path: "/v1/videos/{video_id}/transcript",
      summary: "The transcript as JSON segments, SRT or WebVTT (an untranscribed video gives an empty document)",
      request: {
        params: videoId,
        query: z.object({
          format: z
            .enum(["json", "srt", "vtt"])
            .default("json")
            .openapi({ param: { name: "format", in: "query" } }),
        }),
      },
      responses: {
        200: {
          description: "The transcript",
          content: {
            "application/json": { schema: envelopeOf(transcriptSchema) },
            "application/x-subrip": { schema: z.string() },
            "text/vtt": { schema: z.string() },
          },
        },
        404: jsonError("No such video in this account (VIDEO_NOT_FOUND)"),
      },
    }),
    async (c) => {
      const { video_id } = c.req.valid("param");
      const { format } = c.req.valid("query");
      const out = await svc.transcript(c.get("principal").accountId, video_id, format);
      if ("json" in out) return ok(c, out.json);
      return c.body(out.body, 200, {
        "Content-Type": out.contentType,
        "Content-Disposition": `attachment; filename="${video_id}.${format}"`,
      }) as never;
    },
  );
}
