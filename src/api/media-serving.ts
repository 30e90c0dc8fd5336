import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { errorResponse } from "../http/errors.ts";
import { defineRoute, jsonError } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import type { AppEnv } from "../http/types.ts";
import { CONTAINER_MIME } from "../media/container.ts";
import { notModified, rangeStillValid } from "../media-serving/conditional.ts";
import { parseRange } from "../media-serving/range.ts";
import type { MediaItem } from "../media-serving/service.ts";

const signed = z.object({
  expires: z
    .string()
    .optional()
    .openapi({ param: { name: "expires", in: "query" }, description: "Unix time the link stops working" }),
  signature: z
    .string()
    .optional()
    .openapi({ param: { name: "signature", in: "query" }, description: "HMAC-SHA256 over path and expiry" }),
});
const videoParam = z.string().openapi({ param: { name: "video_id", in: "path" }, example: "vid_Qm3x9T0bL2vK7cP5sN1a" });

/** What a source is served as: the type its container was sniffed as at upload (a TS is video/mp2t). */
const SOURCE_TYPES = [...new Set([...Object.values(CONTAINER_MIME), "video/mp2t"])];

const binary = (types: string[]) => ({
  content: Object.fromEntries(types.map((t) => [t, { schema: z.string().openapi({ format: "binary" }) }])),
});
const responses = (types: string[]) => ({
  200: { description: "The whole file (also when `If-Range` no longer matches)", ...binary(types) },
  302: {
    description:
      "The media are in an S3 bucket (`s3_bucket`): a presigned URL of the object (Location), valid as long as this link (60 s to 1 h); it answers Range itself",
  },
  304: { description: "Not modified (`If-None-Match` / `If-Modified-Since` match the ETag / Last-Modified)" },
  206: { description: "The requested byte range (Content-Range)", ...binary(types) },
  403: jsonError("Missing, wrong or expired signature (FORBIDDEN)"),
  404: jsonError("Unknown video or missing file (VIDEO_NOT_FOUND, NOT_FOUND)"),
  416: { description: "Range not satisfiable (Content-Range: bytes */size)" },
});

/**
 * Presigned media (SPEC §6, §11): playback source, web rendition, clip exports, poster and shot thumbnails. Public routes — the
 * signature in the query string is the credential — with byte ranges so players can seek. Files
 * are streamed from disk (Bun.file slices), never read into memory.
 */
export function registerMediaRoutes(app: Api, deps: HttpDeps) {
  const svc = deps.services.media;
  const entries: {
    path: string;
    doc: string;
    operationId: string;
    summary: string;
    types: string[];
    item: (c: Context<AppEnv>) => MediaItem | null;
  }[] = [
    {
      path: "/media/videos/:video_id/source",
      doc: "/media/videos/{video_id}/source",
      operationId: "getVideoSource",
      summary: "Play a video (presigned, Range)",
      types: SOURCE_TYPES,
      item: () => ({ kind: "source" }),
    },
    {
      path: "/media/videos/:video_id/poster.jpg",
      doc: "/media/videos/{video_id}/poster.jpg",
      operationId: "getVideoPoster",
      summary: "A video's poster (presigned)",
      types: ["image/jpeg"],
      item: () => ({ kind: "poster" }),
    },
    {
      path: "/media/videos/:video_id/web.mp4",
      doc: "/media/videos/{video_id}/web.mp4",
      operationId: "getVideoRendition",
      summary: "Play a video's web rendition (H.264 + AAC MP4; presigned, Range)",
      types: ["video/mp4"],
      item: () => ({ kind: "rendition" }),
    },
    {
      path: "/media/videos/:video_id/clips/:file",
      doc: "/media/videos/{video_id}/clips/{file}",
      operationId: "getClipExport",
      summary: "A clip export, `{start_ms}-{end_ms}.mp4` (presigned, Range)",
      types: ["video/mp4"],
      item: (c) => ({ kind: "clip", file: c.req.param("file") ?? "" }),
    },
    {
      path: "/media/videos/:video_id/shots/:file",
      doc: "/media/videos/{video_id}/shots/{file}",
      operationId: "getShotThumbnail",
      summary: "A shot's thumbnail, `{n}.jpg` (presigned)",
      types: ["image/jpeg"],
      item: (c) => {
        const m = /^(\d{1,6})\.jpg$/.exec(c.req.param("file") ?? "");
        return m ? { kind: "shot", index: Number(m[1]) } : null;
      },
    },
  ];
  for (const e of entries) {
    const params = e.doc.includes("{file}")
      ? z.object({
          video_id: videoParam,
          file: z.string().openapi({
            param: { name: "file", in: "path" },
            example: e.doc.includes("/clips/") ? "12000-18500.mp4" : "3.jpg",
          }),
        })
      : z.object({ video_id: videoParam });
    const route = defineRoute(deps, {
      method: "get",
      path: e.doc,
      operationId: e.operationId,
      tags: ["Media"],
      summary: e.summary,
      access: "public",
      request: { params, query: signed },
      responses: responses(e.types),
    });
    const { middleware, ...doc } = route;
    app.openAPIRegistry.registerPath(doc as never);
    app.get(e.path, ...(middleware as []), async (c) => {
      const item = e.item(c);
      if (!item) return errorResponse(c, "NOT_FOUND", "No such thumbnail");
      const answer = await svc.serve(
        c.req.param("video_id") ?? "",
        item,
        c.req.query("expires"),
        c.req.query("signature"),
      );
      // Media in a bucket (s3_bucket): to a presigned URL of the object, which answers ranges itself.
      if ("redirect" in answer)
        return new Response(null, { status: 302, headers: { Location: answer.redirect, "Cache-Control": "no-store" } });
      const file = answer;
      const validators = {
        etag: `"${file.size.toString(16)}-${Math.floor(file.mtimeMs).toString(16)}"`,
        lastModifiedMs: file.mtimeMs,
      };
      const headers = new Headers({
        "Accept-Ranges": "bytes",
        "Content-Type": file.contentType,
        "Cache-Control": "private, max-age=300",
        ETag: validators.etag,
        "Last-Modified": new Date(file.mtimeMs).toUTCString(),
      });
      if (
        notModified(
          { ifNoneMatch: c.req.header("if-none-match"), ifModifiedSince: c.req.header("if-modified-since") },
          validators,
        )
      ) {
        headers.delete("Content-Type");
        return new Response(null, { status: 304, headers });
      }
      const range = rangeStillValid(c.req.header("if-range"), validators)
        ? parseRange(c.req.header("range"), file.size)
        : { kind: "full" as const };
      if (range.kind === "unsatisfiable") {
        headers.set("Content-Range", `bytes */${file.size}`);
        headers.delete("Content-Type");
        return new Response(null, { status: 416, headers });
      }
      if (range.kind === "partial") {
        headers.set("Content-Range", `bytes ${range.start}-${range.end}/${file.size}`);
        headers.set("Content-Length", String(range.end - range.start + 1));
        return new Response(Bun.file(file.path).slice(range.start, range.end + 1), { status: 206, headers });
      }
      headers.set("Content-Length", String(file.size));
      return new Response(Bun.file(file.path), { status: 200, headers });
    });
  }
}
