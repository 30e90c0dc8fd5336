import { CONTROL_CHARS } from "../core/terminal.ts";
import { z } from "@hono/zod-openapi";

export const PLANS = ["free", "payg", "enterprise"] as const;
export type Plan = (typeof PLANS)[number];

/** Active API keys and webhook endpoints per plan (the seed's table; null = unlimited). */
export const PLAN_LIMITS: Record<Plan, { apiKeys: number | null; webhooks: number | null }> = {
  free: { apiKeys: 1, webhooks: 3 },
  payg: { apiKeys: 20, webhooks: 20 },
  enterprise: { apiKeys: null, webhooks: 100 },
};

export interface Account {
  id: string;
  name: string;
  plan: Plan;
  credits_balance: number | null;
  created_at: string;
}

export interface User {
  id: string;
  account_id: string;
  email: string;
  role: "admin" | "member";
  created_at: string;
}

/** A display name: 1–255 characters after trimming whitespace, no control characters (names reach terminals). */
export const nameSchema = z
  .string()
  .trim()
  .min(1, "must not be empty or only whitespace")
  .max(255, "must be at most 255 characters")
  .refine(
    (s) => !CONTROL_CHARS.test(s),
    "must not contain control characters (escape sequences, newlines, tabs, bidi overrides)",
  );

export const accountInputSchema = z.object({ name: nameSchema, plan: z.enum(PLANS).default("enterprise") });
export const userInputSchema = z.object({
  account_id: z.string().min(1),
  email: z.string().trim().toLowerCase().pipe(z.email()),
  password: z.string().min(8, "must be at least 8 characters").max(1024),
  role: z.enum(["admin", "member"]).default("member"),
});
