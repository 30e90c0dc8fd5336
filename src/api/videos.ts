import { z } from "@hono/zod-openapi";
import { dataResponse, defineRoute, idParam, jsonError, ok } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { listVideosQuery, videoDetailSchema, videoSchema, type VideoStatus } from "../videos/schema.ts";

const videoId = idParam("video_id", "vid_Qm3x9T0bL2vK7cP5sN1a");
const notFound = { 404: jsonError("No such video in this account (VIDEO_NOT_FOUND)") };

export function registerVideoRoutes(app: Api, deps: HttpDeps) {
  const svc = deps.services.videos;
  const base = { tags: ["Videos"], rateGroup: "videos" as const };

  app.openapi(
    defineRoute(deps, {
      ...base,
      access: "read_only",
      method: "get",
      path: "/v1/videos",
      operationId: "listVideos",
      summary: "List videos, newest first",
      request: { query: listVideosQuery },
      responses: { 200: dataResponse("Videos", z.array(videoSchema)) },
    }),
    async (c) => {
      const q = c.req.valid("query");
      const statuses = q.status ? (q.status.split(",").map((s) => s.trim()) as VideoStatus[]) : undefined;
      const { items, total } = await svc.list(
        c.get("principal").accountId,
        { collectionId: q.collection_id, statuses },
        { page: q.page, perPage: q.per_page },
      );
      return ok(c, items, 200, { total, page: q.page, per_page: q.per_page });
    },
  );

  app.openapi(
    defineRoute(deps, {
      ...base,
      access: "read_only",
      method: "get",
      path: "/v1/videos/{video_id}",
      operationId: "getVideo",
      summary: "Get a video with its playback URL, segment count and indexing stages",
      request: { params: videoId },
      responses: { 200: dataResponse("Video", videoDetailSchema), ...notFound },
    }),
    async (c) => ok(c, await svc.get(c.get("principal").accountId, c.req.valid("param").video_id)),
  );

  app.openapi(
    defineRoute(deps, {
      ...base,
      access: "all",
      method: "delete",
      path: "/v1/videos/{video_id}",
      operationId: "deleteVideo",
      summary: "Delete a video: files, rows and vectors",
      request: { params: videoId },
      responses: { 204: { description: "Deleted" }, ...notFound },
    }),
    async (c) => {
      await svc.delete(c.get("principal").accountId, c.req.valid("param").video_id);
      return c.body(null, 204);
    },
  );
}
