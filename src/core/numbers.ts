import { z } from "@hono/zod-openapi";

/**
 * Numbers that arrive as text (query strings, form fields). `z.coerce.number()` is `Number(text)`,
 * which reads "0x10" as 16, "0b11" as 3, "1e3" as 1000, " 7 " as 7 and "" as 0: a client's typo
 * (or a probe) then means something. Here only plain decimal text becomes a number; anything
 * else stays text and fails `inner` as "not a number" (422). Empty text is absent.
 */
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$/;

export function parseDecimal(v: unknown): unknown {
  if (typeof v !== "string") return v;
  if (v === "") return undefined;
  return DECIMAL.test(v) ? Number(v) : v;
}

/** `inner` (a number schema) over plain decimal text. */
export const fromDecimal = <T extends z.ZodType>(inner: T) => z.preprocess(parseDecimal, inner);

/** `page` of a list (from 1), in plain decimal; absent: 1. */
export const pageField = (max?: number) =>
  fromDecimal(max === undefined ? z.number().int().min(1) : z.number().int().min(1).max(max))
    .optional()
    .default(1)
    .openapi({ type: "integer", minimum: 1, ...(max === undefined ? {} : { maximum: max }), example: 1 });

/** `per_page` of a list, in plain decimal; absent: `defaultPerPage`. */
export const perPageField = (maxPerPage: number, defaultPerPage: number) =>
  fromDecimal(z.number().int().min(1).max(maxPerPage))
    .optional()
    .default(defaultPerPage)
    .openapi({ type: "integer", minimum: 1, maximum: maxPerPage, example: defaultPerPage });
