import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "@hono/zod-openapi";
import { parseCidr } from "../net/address-rules.ts";

/**
 * Configuration. This module is the only place that reads `process.env` (see loadConfig's
 * `env` parameter; callers pass `process.env` once, at the entry point).
 * Precedence: flag > env (VSEARCH_*) > <data-dir>/config.json > defaults.
 */

export const RATE_GROUPS = [
  "search",
  "upload",
  "jobs",
  "moment",
  "videos",
  "collections_read",
  "collections_write",
  "api_keys",
  "agent",
  "webhooks",
  "auth",
  "auth_email",
  "auth_address",
] as const;
export type RateGroup = (typeof RATE_GROUPS)[number];

/** Per-minute defaults: the seed's Set A, API keys 10/min (SPEC §8). */
export const DEFAULT_RATE_LIMITS: Record<RateGroup, number> = {
  search: 30,
  upload: 10,
  jobs: 60,
  moment: 60,
  videos: 30,
  collections_read: 100,
  collections_write: 30,
  api_keys: 10,
  agent: 30,
  webhooks: 30,
  // Sign-in (SPEC §8, issue 9): `auth` counts failed sign-ins per (client address, e-mail);
  // `auth_email` failed sign-ins per e-mail from all addresses (distributed guessing);
  // `auth_address` every sign-in attempt per address (spraying many e-mails, argon2 cost).
  auth: 10,
  auth_email: 50,
  auth_address: 60,
};

const rateLimitsSchema = z.object(
  Object.fromEntries(RATE_GROUPS.map((g) => [g, z.number().int().positive().optional()])) as Record<
    RateGroup,
    z.ZodOptional<z.ZodNumber>
  >,
);

const fileSchema = z
  .object({
    host: z.string(),
    port: z.number().int().min(0).max(65535),
    log_level: z.enum(["debug", "info", "warn", "error", "silent"]),
    max_upload_bytes: z.number().int().positive(),
    models_dir: z.string(),
    models_base_url: z.string(),
    device: z.enum(["auto", "cpu", "cuda", "webgpu"]),
    worker_threads: z.number().int().positive(),
    signed_int8_weights: z.enum(["auto", "off"]),
    batch_size: z.number().int().positive(),
    speech_max_tokens: z.number().int().min(16).max(440),
    frame_interval_secs: z.number().min(0.1).max(60),
    frame_loop_filter: z.enum(["auto", "exact", "skip"]),
    frame_decode_processes: z.number().int().min(0).max(64),
    search_cache_mb: z.number().int().min(0),
    clip_max_secs: z.number().positive(),
    clip_cache_mb: z.number().int().min(0),
    model_idle_unload_secs: z.number().min(0),
    job_concurrency: z.number().int().positive(),
    ocr_threads: z.number().int().min(0).max(8),
    ffmpeg_path: z.string(),
    ffprobe_path: z.string(),
    session_ttl_secs: z.number().int().positive(),
    presign_ttl_secs: z.number().int().positive(),
    public_base_url: z.string(),
    webhook_retry_delays: z.array(z.number().nonnegative()),
    webhook_timeout_ms: z.number().int().positive(),
    allow_networks: z.array(z.string()),
    trusted_proxies: z.array(z.string()),
    cors_origins: z.array(z.string()),
    rate_limit_max_clients: z.number().int().min(1000),
    rate_limits: rateLimitsSchema,
    credits_per_minute: z.number().nonnegative(),
    credits_per_search: z.number().nonnegative(),
    credits_low_threshold: z.number().nonnegative(),
  })
  .partial()
  .strict();

export type Device = "auto" | "cpu" | "cuda" | "webgpu";

export interface Config {
  dataDir: string;
  host: string;
  port: number;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  maxUploadBytes: number;
  /** Largest JSON/form body accepted by non-upload routes. */
  maxJsonBytes: number;
  modelsDir: string;
  /** Where `vsearch models pull` downloads from (a mirror made with `models export`, or a hub). */
  modelsBaseUrl?: string;
  device: Device;
  workerThreads: number;
  /**
   * `auto`: on CPUs with VNNI, load int8 models with their uint8 weights made signed (same outputs,
   * ~2× faster CLIP; see src/inference/signed-weights.ts). `off`: always load models as installed.
   */
  signedInt8Weights: "auto" | "off";
  batchSize: number;
  /**
   * Most tokens Whisper may generate per 30 s window (a safety cap; speech needs ~100). Lower it
   * to bound what a hallucination loop on music or noise costs.
   */
  speechMaxTokens: number;
  /** Seconds between the frames sampled for image embeddings (docs/INGEST.md). */
  frameIntervalSecs: number;
  /**
   * Whether a full (long-GOP) decode for the visual stages runs the deblocking filter: `auto` skips
   * it from 720p up, `exact` never, `skip` always (docs/INGEST.md "Decoder shortcuts"). OCR's decode
   * is always exact.
   */
  frameLoopFilter: "auto" | "exact" | "skip";
  /**
   * ffmpeg processes a full (long-GOP) visual decode is split into over time (docs/INGEST.md
   * "Split decode"); 0 (default): the cores shared among `jobConcurrency` jobs, 1: never split.
   */
  frameDecodeProcesses: number;
  /** Exact vectors kept in memory for search rescoring, MiB (0: read them from the store every time). */
  searchCacheMb: number;
  /** Longest span `GET /v1/videos/{id}/clip` cuts, seconds. */
  clipMaxSecs: number;
  /** Bound on all cached clip exports together, MiB (least recently used go first). */
  clipCacheMb: number;
  /**
   * Seconds an inference pool may sit without a task before its workers (and the models they hold)
   * are closed; the next task starts them again. 0 keeps models loaded for the life of the process.
   */
  modelIdleUnloadSecs: number;
  jobConcurrency: number;
  /** tesseract.js worker threads for on-screen text (0 turns the stage off). */
  ocrThreads: number;
  ffmpegPath?: string;
  ffprobePath?: string;
  sessionTtlSecs: number;
  presignTtlSecs: number;
  /** Base of presigned URLs; defaults to the URL the server listens on. */
  publicBaseUrl?: string;
  webhookRetryDelaysSecs: number[];
  webhookTimeoutMs: number;
  allowNetworks: string[];
  /**
   * Reverse proxies (CIDRs or addresses) whose `X-Forwarded-For` is believed. Empty (default):
   * the client address is the socket peer and the header is ignored.
   */
  trustedProxies: string[];
  /** Origins allowed to call the API from a browser (CORS). Empty (default): CORS is off. */
  corsOrigins: string[];
  /** Most rate-limit counters kept in memory; past it the least recently used are dropped. */
  rateLimitMaxClients: number;
  rateLimits: Record<RateGroup, number>;
  creditsPerMinute: number;
  creditsPerSearch: number;
  creditsLowThreshold: number;
}

export interface ConfigFlags {
  dataDir?: string;
  host?: string;
  port?: number;
  logLevel?: Config["logLevel"];
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

const num = (name: string, v: string | undefined): number | undefined => {
  if (v === undefined || v === "") return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new ConfigError(`${name} must be a number, got "${v}"`);
  return n;
};
const ocrThreads = (n: number): number => {
  if (!Number.isInteger(n) || n < 0 || n > 8)
    throw new ConfigError(`VSEARCH_OCR_THREADS must be an integer from 0 to 8, got ${n}`);
  return n;
};
const list = (v: string | undefined): string[] | undefined =>
  v === undefined
    ? undefined
    : v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);

function readConfigFile(dataDir: string): z.infer<typeof fileSchema> {
  const file = join(dataDir, "config.json");
  if (!existsSync(file)) return {};
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new ConfigError(`${file} is not valid JSON: ${(e as Error).message}`);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new ConfigError(`${file}: ${first.path.join(".") || "(root)"}: ${first.message}`);
  }
  return parsed.data;
}

export function loadConfig(flags: ConfigFlags = {}, env: Record<string, string | undefined> = {}): Config {
  const dataDir = resolve(flags.dataDir ?? env.VSEARCH_DATA_DIR ?? "./vsearch-data");
  const file = readConfigFile(dataDir);
  const pick = <T>(...vals: (T | undefined)[]): T | undefined => vals.find((v) => v !== undefined);

  const rateLimits = { ...DEFAULT_RATE_LIMITS };
  for (const g of RATE_GROUPS) {
    const v = pick(
      num(`VSEARCH_RATE_LIMIT_${g.toUpperCase()}`, env[`VSEARCH_RATE_LIMIT_${g.toUpperCase()}`]),
      file.rate_limits?.[g],
    );
    if (v !== undefined) rateLimits[g] = v;
  }
  const device = pick(env.VSEARCH_DEVICE, file.device) ?? "auto";
  if (!["auto", "cpu", "cuda", "webgpu"].includes(device)) {
    throw new ConfigError(`VSEARCH_DEVICE must be auto, cpu, cuda or webgpu, got "${device}"`);
  }
  const signedInt8Weights = pick(env.VSEARCH_SIGNED_INT8_WEIGHTS, file.signed_int8_weights) ?? "auto";
  if (signedInt8Weights !== "auto" && signedInt8Weights !== "off") {
    throw new ConfigError(`VSEARCH_SIGNED_INT8_WEIGHTS must be auto or off, got "${signedInt8Weights}"`);
  }
  const speechMaxTokens =
    pick(num("VSEARCH_SPEECH_MAX_TOKENS", env.VSEARCH_SPEECH_MAX_TOKENS), file.speech_max_tokens) ?? 224;
  if (!Number.isInteger(speechMaxTokens) || speechMaxTokens < 16 || speechMaxTokens > 440) {
    throw new ConfigError(`VSEARCH_SPEECH_MAX_TOKENS must be an integer in 16..440, got ${speechMaxTokens}`);
  }
  const frameIntervalSecs =
    pick(num("VSEARCH_FRAME_INTERVAL_SECS", env.VSEARCH_FRAME_INTERVAL_SECS), file.frame_interval_secs) ?? 1;
  if (!(frameIntervalSecs >= 0.1 && frameIntervalSecs <= 60)) {
    throw new ConfigError(
      `VSEARCH_FRAME_INTERVAL_SECS must be a number of seconds in 0.1..60, got ${frameIntervalSecs}`,
    );
  }
  const frameLoopFilter = pick(env.VSEARCH_FRAME_LOOP_FILTER, file.frame_loop_filter) ?? "auto";
  if (frameLoopFilter !== "auto" && frameLoopFilter !== "exact" && frameLoopFilter !== "skip") {
    throw new ConfigError(`VSEARCH_FRAME_LOOP_FILTER must be auto, exact or skip, got "${frameLoopFilter}"`);
  }
  // Default 0 (one per core): on two quiet cores the split made the 250-frame bench clip ready in
  // 0.66× the time of one process; with other work holding a core it can be slower
  // (BENCHMARKS.md "Split decode").
  const frameDecodeProcesses =
    pick(num("VSEARCH_FRAME_DECODE_PROCESSES", env.VSEARCH_FRAME_DECODE_PROCESSES), file.frame_decode_processes) ?? 0;
  if (!Number.isInteger(frameDecodeProcesses) || frameDecodeProcesses < 0 || frameDecodeProcesses > 64) {
    throw new ConfigError(
      `VSEARCH_FRAME_DECODE_PROCESSES must be an integer in 0..64 (0: one per core), got ${frameDecodeProcesses}`,
    );
  }
  const modelIdleUnloadSecs =
    pick(num("VSEARCH_MODEL_IDLE_UNLOAD_SECS", env.VSEARCH_MODEL_IDLE_UNLOAD_SECS), file.model_idle_unload_secs) ?? 300;
  if (modelIdleUnloadSecs < 0)
    throw new ConfigError(`VSEARCH_MODEL_IDLE_UNLOAD_SECS must be 0 or more, got ${modelIdleUnloadSecs}`);
  const logLevel = pick(flags.logLevel, env.VSEARCH_LOG_LEVEL as Config["logLevel"], file.log_level) ?? "info";
  const port = pick(flags.port, num("VSEARCH_PORT", env.VSEARCH_PORT), file.port) ?? 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`port must be 0-65535, got ${port}`);

  const trustedProxies = pick(list(env.VSEARCH_TRUSTED_PROXIES), file.trusted_proxies) ?? [];
  for (const p of trustedProxies) {
    try {
      parseCidr(p);
    } catch (e) {
      throw new ConfigError(`trusted_proxies: ${(e as Error).message}`);
    }
  }
  const corsOrigins = pick(list(env.VSEARCH_CORS_ORIGINS), file.cors_origins) ?? [];
  for (const o of corsOrigins) {
    if (!/^https?:\/\/[^/\s]+$/.test(o))
      throw new ConfigError(`cors_origins: "${o}" is not an origin like https://app.example.com`);
  }

  const rateLimitMaxClients =
    pick(num("VSEARCH_RATE_LIMIT_MAX_CLIENTS", env.VSEARCH_RATE_LIMIT_MAX_CLIENTS), file.rate_limit_max_clients) ??
    500_000;
  if (!Number.isInteger(rateLimitMaxClients) || rateLimitMaxClients < 1000) {
    throw new ConfigError(`rate_limit_max_clients must be an integer ≥ 1000, got ${rateLimitMaxClients}`);
  }

  const retry = pick(
    list(env.VSEARCH_WEBHOOK_RETRY_DELAYS)?.map((s) => num("VSEARCH_WEBHOOK_RETRY_DELAYS", s)!),
    file.webhook_retry_delays,
  );

  return {
    dataDir,
    host: pick(flags.host, env.VSEARCH_HOST, file.host) ?? "127.0.0.1",
    port,
    logLevel,
    maxUploadBytes:
      pick(num("VSEARCH_MAX_UPLOAD_BYTES", env.VSEARCH_MAX_UPLOAD_BYTES), file.max_upload_bytes) ?? 5 * 1024 ** 3,
    maxJsonBytes: 1024 * 1024,
    modelsDir: resolve(dataDir, pick(env.VSEARCH_MODELS_DIR, file.models_dir) ?? "models"),
    modelsBaseUrl: pick(env.VSEARCH_MODELS_BASE_URL, file.models_base_url),
    device: device as Device,
    workerThreads: pick(num("VSEARCH_WORKER_THREADS", env.VSEARCH_WORKER_THREADS), file.worker_threads) ?? 1,
    signedInt8Weights,
    batchSize: pick(num("VSEARCH_BATCH_SIZE", env.VSEARCH_BATCH_SIZE), file.batch_size) ?? 8,
    speechMaxTokens,
    frameIntervalSecs,
    frameLoopFilter,
    frameDecodeProcesses,
    searchCacheMb: pick(num("VSEARCH_SEARCH_CACHE_MB", env.VSEARCH_SEARCH_CACHE_MB), file.search_cache_mb) ?? 256,
    clipMaxSecs: pick(num("VSEARCH_CLIP_MAX_SECS", env.VSEARCH_CLIP_MAX_SECS), file.clip_max_secs) ?? 300,
    clipCacheMb: pick(num("VSEARCH_CLIP_CACHE_MB", env.VSEARCH_CLIP_CACHE_MB), file.clip_cache_mb) ?? 1024,
    modelIdleUnloadSecs,
    jobConcurrency: pick(num("VSEARCH_JOB_CONCURRENCY", env.VSEARCH_JOB_CONCURRENCY), file.job_concurrency) ?? 1,
    ocrThreads: ocrThreads(pick(num("VSEARCH_OCR_THREADS", env.VSEARCH_OCR_THREADS), file.ocr_threads) ?? 1),
    ffmpegPath: pick(env.VSEARCH_FFMPEG_PATH, file.ffmpeg_path),
    ffprobePath: pick(env.VSEARCH_FFPROBE_PATH, file.ffprobe_path),
    sessionTtlSecs:
      pick(num("VSEARCH_SESSION_TTL_SECS", env.VSEARCH_SESSION_TTL_SECS), file.session_ttl_secs) ?? 12 * 3600,
    presignTtlSecs: pick(num("VSEARCH_PRESIGN_TTL_SECS", env.VSEARCH_PRESIGN_TTL_SECS), file.presign_ttl_secs) ?? 3600,
    publicBaseUrl: pick(env.VSEARCH_PUBLIC_BASE_URL, file.public_base_url),
    webhookRetryDelaysSecs: retry ?? [30, 60],
    webhookTimeoutMs:
      pick(num("VSEARCH_WEBHOOK_TIMEOUT_MS", env.VSEARCH_WEBHOOK_TIMEOUT_MS), file.webhook_timeout_ms) ?? 10_000,
    allowNetworks: pick(list(env.VSEARCH_WEBHOOK_ALLOW_NETWORKS), file.allow_networks) ?? [],
    trustedProxies,
    corsOrigins,
    rateLimitMaxClients,
    rateLimits,
    creditsPerMinute:
      pick(num("VSEARCH_CREDITS_PER_MINUTE", env.VSEARCH_CREDITS_PER_MINUTE), file.credits_per_minute) ?? 1,
    creditsPerSearch:
      pick(num("VSEARCH_CREDITS_PER_SEARCH", env.VSEARCH_CREDITS_PER_SEARCH), file.credits_per_search) ?? 0.1,
    creditsLowThreshold:
      pick(num("VSEARCH_CREDITS_LOW_THRESHOLD", env.VSEARCH_CREDITS_LOW_THRESHOLD), file.credits_low_threshold) ?? 100,
  };
}
