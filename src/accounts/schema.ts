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

export const ROLES = ["admin", "member"] as const;
export type Role = (typeof ROLES)[number];

export interface User {
  id: string;
  account_id: string;
  email: string;
  role: Role;
  /** Signed in with a one-time password an admin set: must choose a new one before anything else. */
  must_change_password: boolean;
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
export const emailSchema = z.string().trim().toLowerCase().pipe(z.email()).openapi({ example: "ana@example.com" });
export const passwordSchema = z.string().min(8, "must be at least 8 characters").max(1024);

export const userInputSchema = z.object({
  account_id: z.string().min(1),
  email: emailSchema,
  password: passwordSchema,
  role: z.enum(ROLES).default("member"),
  must_change_password: z.boolean().default(false),
});

export const userSchema = z
  .object({
    id: z.string().openapi({ example: "mbr_4kQ9zT2mX8bV1nR6pL0c" }),
    account_id: z.string(),
    email: z.string(),
    role: z.enum(ROLES),
    must_change_password: z
      .boolean()
      .openapi({ description: "Signs in with a one-time password and must choose a new one first" }),
    created_at: z.string(),
  })
  .openapi("User");

/** POST /v1/users: invite = create with a one-time password (generated when none is given). */
export const inviteSchema = z
  .object({
    email: emailSchema,
    role: z.enum(ROLES).default("member"),
    password: passwordSchema.optional().openapi({ description: "One-time password; generated when omitted" }),
  })
  .strict();

export const roleSchema = z.object({ role: z.enum(ROLES) }).strict();

export const resetSchema = z
  .object({
    password: passwordSchema.optional().openapi({ description: "One-time password; generated when omitted" }),
  })
  .strict();

export const changePasswordSchema = z
  .object({ current_password: z.string().min(1).max(1024), new_password: passwordSchema })
  .strict();

export const oneTimePasswordSchema = z
  .object({
    user: userSchema,
    one_time_password: z
      .string()
      .openapi({ description: "Shown once: the user signs in with it and must then choose their own" }),
  })
  .openapi("UserWithOneTimePassword");

export const setupStatusSchema = z
  .object({
    required: z.boolean().openapi({ description: "No account exists yet: the setup link's page creates the first" }),
  })
  .openapi("SetupStatus");

export const setupSchema = z
  .object({
    token: z.string().min(1).max(200).openapi({ description: "From the setup link `vsearch serve` printed" }),
    account_name: nameSchema,
    email: emailSchema,
    password: passwordSchema,
  })
  .strict();
