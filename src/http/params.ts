import { z } from "@hono/zod-openapi";

export const pageQuery = (maxPerPage: number, defaultPerPage: number) =>
  z.object({
    page: z.coerce.number().int().min(1).default(1).openapi({ example: 1 }),
    per_page: z.coerce
      .number()
      .int()
      .min(1)
      .max(maxPerPage)
      .default(defaultPerPage)
      .openapi({ example: defaultPerPage }),
  });

export const idParam = (name: string, example: string) =>
  z.object({
    [name]: z
      .string()
      .min(1)
      .max(64)
      .openapi({ param: { name, in: "path" }, example }),
  });
