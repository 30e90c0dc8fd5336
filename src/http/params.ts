import { z } from "@hono/zod-openapi";
import { pageField, perPageField } from "../core/numbers.ts";

/** `page` and `per_page`, in plain decimal only (`page=0x10` is a 422, not page 16: core/numbers.ts). */
export const pageQuery = (maxPerPage: number, defaultPerPage: number) =>
  z.object({
    page: pageField(),
    per_page: perPageField(maxPerPage, defaultPerPage),
  });

export const idParam = (name: string, example: string) =>
  z.object({
    [name]: z
      .string()
      .min(1)
      .max(64)
      .openapi({ param: { name, in: "path" }, example }),
  });
