import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "@hono/zod-openapi";
import {
  DEFAULT_RATE_LIMITS,
  RATE_GROUPS,
  RATE_LIMITS_KEY,
  type RateGroup,
  rateLimitEnv,
  rateLimitSchema,
  SETTINGS,
  type SettingName,
  type SettingRow,
  type SettingValues,
} from "./settings.ts";

/**
 * Configuration. This module is the only place that reads `process.env` (see loadConfig's
 * `env` parameter; callers pass `process.env` once, at the entry point).
 * Precedence: flag > env (VSEARCH_*) > <data-dir>/config.json > defaults.
 * Every setting is a row of the settings table (settings.ts); the type, the parsing and the
 * config.json schema below are derived from it.
 */

export { DEFAULT_RATE_LIMITS, RATE_GROUPS, type RateGroup } from "./settings.ts";
export type { Device } from "./settings.ts";

export type Config = SettingValues & {
  /** Largest JSON/form body accepted by non-upload routes (not a setting). */
  maxJsonBytes: number;
  rateLimits: Record<RateGroup, number>;
};

export type ConfigFlags = Partial<
  Pick<SettingValues, "dataDir" | "host" | "port" | "logLevel" | "databaseUrl" | "mediaRoot" | "jobConcurrency">
>;

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Settings that only make sense together, checked where they are used (the composition root). */
export function assertConsistent(config: Pick<Config, "vectorBackend" | "databaseUrl">): void {
  // pgvector's indexes live in PostgreSQL: there is none without it.
  if (config.vectorBackend === "pgvector" && !config.databaseUrl)
    throw new ConfigError(
      'vector_backend "pgvector" needs database_url (VSEARCH_DATABASE_URL): pgvector indexes live in PostgreSQL; the embedded store searches with the in-memory index ("memory")',
    );
}

type Env = Record<string, string | undefined>;
type AnyRow = SettingRow<unknown>;
const rows = () => Object.entries(SETTINGS) as [SettingName, AnyRow][];

/** The config.json schema: each row's schema under its key, all optional, unknown keys refused. */
export const fileSchema = z
  .object({
    ...Object.fromEntries(rows().flatMap(([, r]) => (r.key ? [[r.key, r.schema]] : []))),
    [RATE_LIMITS_KEY]: z.object(Object.fromEntries(RATE_GROUPS.map((g) => [g, rateLimitSchema]))).partial(),
  })
  .partial()
  .strict();
type FileValues = Record<string, unknown> & { rate_limits?: Partial<Record<RateGroup, number>> };

const num = (name: string, v: string): number | undefined => {
  if (v === "") return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new ConfigError(`${name} must be a number, got "${v}"`);
  return n;
};
const list = (v: string): string[] =>
  v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/** The row's value from the environment, parsed as its kind says; undefined when unset. */
function fromEnv(r: AnyRow, env: Env): unknown {
  const raw = env[r.env];
  if (raw === undefined) return undefined;
  if (r.envKind === "number") return num(r.env, raw);
  if (r.envKind === "list") return list(raw);
  if (r.envKind === "number-list") return list(raw).map((s) => num(r.env, s));
  return raw;
}

const shown = (v: unknown) => (typeof v === "string" ? `"${v}"` : Array.isArray(v) ? v.join(",") : String(v));

/** `value` checked against the row: "<name> must be <requirement>, got <value>" when it is not. */
function checked(r: AnyRow, value: unknown, name: string): unknown {
  const parsed = r.schema.safeParse(value);
  if (!parsed.success)
    throw new ConfigError(`${name} must be ${r.requirement ?? parsed.error.issues[0].message}, got ${shown(value)}`);
  const problem = r.check?.(parsed.data);
  if (problem) throw new ConfigError(`${name}: ${problem}`);
  return parsed.data;
}

function readConfigFile(dataDir: string): { file: string; values: FileValues } {
  const file = join(dataDir, "config.json");
  if (!existsSync(file)) return { file, values: {} };
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new ConfigError(`${file} is not valid JSON: ${(e as Error).message}`);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const r = rows().find(([, x]) => x.key !== null && x.key === first.path[0])?.[1];
    if (r?.requirement && first.path.length === 1)
      throw new ConfigError(
        `${file}: ${r.key} must be ${r.requirement}, got ${JSON.stringify((raw as FileValues)[r.key!])}`,
      );
    throw new ConfigError(`${file}: ${first.path.join(".") || "(root)"}: ${first.message}`);
  }
  return { file, values: parsed.data as FileValues };
}

export function loadConfig(flags: ConfigFlags = {}, env: Env = {}): Config {
  /** flag > env > config.json > default, checked against the row whichever source won. */
  const resolveSetting = (name: SettingName, r: AnyRow, fileValues: FileValues, file: string): unknown => {
    const flag = (flags as Record<string, unknown>)[name];
    const fromEnvValue = fromEnv(r, env);
    const hint = r.key ? ` (config.json: ${r.key})` : "";
    let value: unknown;
    if (flag !== undefined) value = checked(r, flag, r.flag ?? name);
    else if (fromEnvValue !== undefined) {
      try {
        value = checked(r, fromEnvValue, r.env);
      } catch (e) {
        throw new ConfigError(`${(e as Error).message}${hint}`);
      }
    } else if (r.key && fileValues[r.key] !== undefined) value = checked(r, fileValues[r.key], `${file}: ${r.key}`);
    else value = r.default;
    return value;
  };

  const dataDirRow = SETTINGS.dataDir as AnyRow;
  const dataDir = resolve(resolveSetting("dataDir", dataDirRow, {}, "") as string);
  const { file, values } = readConfigFile(dataDir);
  const out: Record<string, unknown> = { dataDir };
  for (const [name, r] of rows()) {
    if (name === "dataDir") continue;
    const v = resolveSetting(name, r, values, file);
    out[name] = v !== undefined && r.finish ? r.finish(v, { dataDir }) : v;
  }

  const rateLimits = { ...DEFAULT_RATE_LIMITS };
  for (const g of RATE_GROUPS) {
    const name = rateLimitEnv(g);
    const raw = env[name] === undefined ? undefined : num(name, env[name]);
    if (raw !== undefined && !rateLimitSchema.safeParse(raw).success)
      throw new ConfigError(`${name} must be a positive integer (requests per minute), got ${raw}`);
    const v = raw ?? values.rate_limits?.[g];
    if (v !== undefined) rateLimits[g] = v;
  }
  return { ...(out as SettingValues), maxJsonBytes: 1024 * 1024, rateLimits };
}
