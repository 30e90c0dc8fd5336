import { dataResponse, defineRoute, idParam, jsonBody, jsonError, ok, pageQuery } from "../http/index.ts";
import type { Api, HttpDeps } from "../http/deps.ts";
import { z } from "@hono/zod-openapi";
import { collectionDetailSchema, collectionInputSchema, collectionSchema } from "../collections/schema.ts";

const collectionId = idParam("collection_id", "col_8Hq2mZ0aP4xR7tY1uW3e");
const notFound = { 404: jsonError("No such collection in this account (COLLECTION_NOT_FOUND)") };
const nameTaken = { 409: jsonError("Name already used in this account (COLLECTION_NAME_TAKEN)") };
const body = jsonBody(collectionInputSchema);

export function registerCollectionRoutes(app: Api, deps: HttpDeps) {
  const svc = deps.services.collections;
  const read = { tags: ["Collections"], access: "read_only" as const, rateGroup: "collections_read" as const };
  const write = { tags: ["Collections"], access: "all" as const, rateGroup: "collections_write" as const };

  app.openapi(
    defineRoute(deps, {
      ...write,
      method: "post",
      path: "/v1/collections",
      operationId: "createCollection",
      summary: "Create a collection",
      request: { body },
      responses: { 201: dataResponse("Created", collectionSchema), ...nameTaken },
    }),
    async (c) => ok(c, await svc.create(c.get("principal").accountId, c.req.valid("json")), 201),
  );

  app.openapi(
    defineRoute(deps, {
      ...read,
      method: "get",
      path: "/v1/collections",
      operationId: "listCollections",
      summary: "List collections, oldest first, with video_count and up to 4 thumbnail_urls",
      request: { query: pageQuery(100, 100) },
      responses: { 200: dataResponse("Collections", z.array(collectionSchema)) },
    }),
    async (c) => {
      const { page, per_page } = c.req.valid("query");
      const { items, total } = await svc.list(c.get("principal").accountId, { page, perPage: per_page });
      return ok(c, items, 200, { total, page, per_page });
    },
  );

  app.openapi(
    defineRoute(deps, {
      ...read,
      method: "get",
      path: "/v1/collections/{collection_id}",
      operationId: "getCollection",
      summary: "Get a collection with its totals",
      request: { params: collectionId },
      responses: { 200: dataResponse("Collection", collectionDetailSchema), ...notFound },
    }),
    async (c) => ok(c, await svc.get(c.get("principal").accountId, c.req.valid("param").collection_id)),
  );

  app.openapi(
    defineRoute(deps, {
      ...write,
      method: "patch",
      path: "/v1/collections/{collection_id}",
      operationId: "updateCollection",
      summary: "Rename a collection",
      request: { params: collectionId, body },
      responses: { 200: dataResponse("Renamed", collectionSchema), ...notFound, ...nameTaken },
    }),
    async (c) =>
      ok(c, await svc.rename(c.get("principal").accountId, c.req.valid("param").collection_id, c.req.valid("json"))),
  );

  app.openapi(
    defineRoute(deps, {
      ...write,
      method: "delete",
      path: "/v1/collections/{collection_id}",
      operationId: "deleteCollection",
      summary: "Delete a collection with its videos, files and index rows",
      request: { params: collectionId },
      responses: { 204: { description: "Deleted" }, ...notFound },
    }),
    async (c) => {
      await svc.delete(c.get("principal").accountId, c.req.valid("param").collection_id);
      return c.body(null, 204);
    },
  );
}
