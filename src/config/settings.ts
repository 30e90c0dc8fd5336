import { resolve } from "node:path";
import { z } from "@hono/zod-openapi";
import { parseCidr } from "../net/address-rules.ts";
import { memoryBudgetProblem } from "./memory-budget.ts";

/**
 * The settings table: one row per setting. From it come the `Config` type (config.ts), the
 * environment parsing and the config.json schema (`loadConfig`), and the table in
 * docs/CONFIGURATION.md (`bun scripts/gen-docs.ts`; a test fails when the doc drifts).
 *
 * Adding a setting (docs/GUIDE.md "A setting"): add a row below under its `Config` field name,
 * run `bun scripts/gen-docs.ts`, read it as `config.<field>`.
 *
 * Over the ~450-line guide on purpose: the table is the one place every setting is listed, ~12
 * lines a row; splitting it would bring back a second list to keep in step.
 */
export interface SettingRow<T> {
  /** Its key in `<data-dir>/config.json`; null: not settable there. */
  key: string | null;
  /** The environment variable (precedence: flag > env > config.json > default). */
  env: string;
  /** A command-line flag that wins over the environment, as the docs show it. */
  flag?: string;
  /** What a value must be, whichever source it comes from. */
  schema: z.ZodType<T>;
  /** How the environment's text becomes a value: as is, a number, or a comma-separated list. */
  envKind: "string" | "number" | "list" | "number-list";
  /** The rule in words, for the error: "<name> must be <requirement>, got <value>". */
  requirement?: string;
  /** A further check on a well-typed value; returns the problem in words. */
  check?: (v: T) => string | undefined;
  /** The value's final form (a path resolved against the data dir). */
  finish?: (v: T, ctx: { dataDir: string }) => T;
  /** undefined: the setting is unset unless given. */
  default: T | undefined;
  /** What the setting is (the docs' first column). */
  doc: string;
  /** Range, unit or allowed values, shown beside the variable's name. */
  range?: string;
  /** The docs' default column, when the value alone says too little. */
  defaultDoc?: string;
}

type RowOf<S extends z.ZodType> = Omit<SettingRow<z.output<S>>, "schema" | "default"> & { schema: S };
/** A row with a default: its `Config` field is always set. */
const row = <S extends z.ZodType>(r: RowOf<S> & { default: NoInfer<z.output<S>> }) => r;
/** A row without one: its `Config` field may be undefined. */
const unset = <S extends z.ZodType>(r: RowOf<S>) => ({ ...r, default: undefined });

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => z.number().int().min(min).max(max);
const positiveInt = z.number().int().positive();
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) => z.enum(values);
const words = (values: readonly string[]) =>
  `${values.slice(0, -1).join(", ")}${values.length > 1 ? " or " : ""}${values.at(-1)}`;
const choices = (values: readonly string[]) => values.map((v) => `\`${v}\``).join("\\|");

const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
const DEVICES = ["auto", "cpu", "cuda", "webgpu"] as const;
const SIGNED_INT8 = ["auto", "off"] as const;
const LOOP_FILTER = ["auto", "exact", "skip"] as const;
const OCR_ENGINES = ["ppocr", "tesseract"] as const;
const VECTOR_BACKENDS = ["memory", "pgvector"] as const;
const S3_URL_STYLES = ["path", "virtual-hosted"] as const;

export type Device = (typeof DEVICES)[number];

export const SETTINGS = {
  dataDir: row({
    key: null,
    env: "VSEARCH_DATA_DIR",
    flag: "--data-dir",
    schema: z.string(),
    envKind: "string",
    default: "./vsearch-data",
    doc: "data directory",
  }),
  host: row({
    key: "host",
    env: "VSEARCH_HOST",
    flag: "--host",
    schema: z.string(),
    envKind: "string",
    default: "127.0.0.1",
    doc: "listen address",
  }),
  port: row({
    key: "port",
    env: "VSEARCH_PORT",
    flag: "--port",
    schema: int(0, 65535),
    envKind: "number",
    requirement: "an integer in 0..65535",
    default: 8080,
    doc: "port",
  }),
  logLevel: row({
    key: "log_level",
    env: "VSEARCH_LOG_LEVEL",
    flag: "--log-level",
    schema: oneOf(LOG_LEVELS),
    envKind: "string",
    requirement: words(LOG_LEVELS),
    default: "info",
    doc: "log level",
    defaultDoc: "`info` (`warn` for one-shot CLI commands)",
  }),
  maxUploadBytes: row({
    key: "max_upload_bytes",
    env: "VSEARCH_MAX_UPLOAD_BYTES",
    schema: positiveInt,
    envKind: "number",
    requirement: "a positive integer (bytes)",
    default: 5 * 1024 ** 3,
    doc: "largest upload",
    defaultDoc: "5 GiB",
  }),
  modelsDir: row({
    key: "models_dir",
    env: "VSEARCH_MODELS_DIR",
    schema: z.string(),
    envKind: "string",
    finish: (v, { dataDir }) => resolve(dataDir, v),
    default: "models",
    doc: "models folder",
    defaultDoc: "`<data-dir>/models`",
  }),
  modelsBaseUrl: unset({
    key: "models_base_url",
    env: "VSEARCH_MODELS_BASE_URL",
    range: "(or `models pull --base-url`)",
    schema: z.string(),
    envKind: "string",
    doc: "model mirror for `models pull`",
    defaultDoc: "none: the Hugging Face hub (`HF_ENDPOINT`, below)",
  }),
  device: row({
    key: "device",
    env: "VSEARCH_DEVICE",
    schema: oneOf(DEVICES),
    envKind: "string",
    requirement: words(DEVICES),
    default: "auto",
    doc: "accelerator",
    range: `= ${choices(DEVICES)}`,
    defaultDoc: "`auto` (CPU unless a GPU provider loads)",
  }),
  workerThreads: row({
    key: "worker_threads",
    env: "VSEARCH_WORKER_THREADS",
    schema: positiveInt,
    envKind: "number",
    requirement: "a positive integer",
    default: 1,
    doc: "inference threads",
  }),
  signedInt8Weights: row({
    key: "signed_int8_weights",
    env: "VSEARCH_SIGNED_INT8_WEIGHTS",
    schema: oneOf(SIGNED_INT8),
    envKind: "string",
    // "on" is named in the refusal: it could only differ from auto where it changes the outputs.
    requirement: `${words(SIGNED_INT8)} (there is no "on": auto already converts wherever it is safe, on CPUs with AVX512-VNNI or AVX-VNNI; without VNNI signed weights change the outputs, as ONNX Runtime's u8×s8 kernel saturates)`,
    default: "auto",
    doc: "signed int8 weights",
    range: `= ${choices(SIGNED_INT8)}`,
    defaultDoc:
      "`auto`: on CPUs with VNNI, uint8 weights of int8 models are loaded as int8 (same outputs, ~2× faster CLIP; a derived copy under `<data-dir>/runtime/signed-models`); without VNNI they load as installed. No `on`: refused, since it could only differ from `auto` where it changes the outputs (docs/MODELS.md)",
  }),
  batchSize: row({
    key: "batch_size",
    env: "VSEARCH_BATCH_SIZE",
    schema: positiveInt,
    envKind: "number",
    requirement: "a positive integer",
    default: 8,
    doc: "image batch size",
  }),
  speechMaxTokens: row({
    key: "speech_max_tokens",
    env: "VSEARCH_SPEECH_MAX_TOKENS",
    schema: int(16, 440),
    envKind: "number",
    requirement: "an integer in 16..440",
    default: 224,
    doc: "Whisper tokens per 30 s window, at most",
    range: "(16–440)",
    defaultDoc: "224 (speech needs ~100; a lower cap bounds what a hallucination loop costs)",
  }),
  frameIntervalSecs: row({
    key: "frame_interval_secs",
    env: "VSEARCH_FRAME_INTERVAL_SECS",
    schema: z.number().min(0.1).max(60),
    envKind: "number",
    requirement: "a number of seconds in 0.1..60",
    default: 1,
    doc: "Seconds between frames sampled for image search",
    range: "(0.1–60)",
    defaultDoc: '1 (what it trades: docs/INGEST.md, "Frame sampling policy")',
  }),
  frameLoopFilter: row({
    key: "frame_loop_filter",
    env: "VSEARCH_FRAME_LOOP_FILTER",
    schema: oneOf(LOOP_FILTER),
    envKind: "string",
    requirement: words(LOOP_FILTER),
    default: "auto",
    doc: "Deblocking (loop) filter in the full decode of long-GOP video for the visual stages",
    range: `= ${choices(LOOP_FILTER)}`,
    defaultDoc:
      '`auto`: skipped from 720p up (~15–22 % less decode CPU; the 224 px model input and 320 px thumbnails move by ~1.3–1.6 levels of 255 on average, 40–42 dB), kept below; `exact` keeps it always, `skip` skips it always. With an image model OCR reads the frames of this same decode; its own decode (no image model) always keeps the filter (docs/INGEST.md, "Decoder shortcuts", "On-screen text")',
  }),
  // Default 0 (one per core): on two quiet cores the split made the 250-frame bench clip ready in
  // 0.66× the time of one process; with other work holding a core it can be slower
  // (BENCHMARKS.md "Split decode").
  frameDecodeProcesses: row({
    key: "frame_decode_processes",
    env: "VSEARCH_FRAME_DECODE_PROCESSES",
    schema: int(0, 64),
    envKind: "number",
    requirement: "an integer in 0..64 (0: one per core)",
    default: 0,
    doc: "ffmpeg processes a full decode of long-GOP video is split into, over time",
    range: "(0–64)",
    defaultDoc:
      '0: one per core, shared among `job_concurrency` jobs (on two idle cores the 250-frame bench clip is ready in 0.66× the time of one process; with a neighbour holding a core it is no faster, or slower: BENCHMARKS.md "Split decode"); 1 never splits. Only MP4/MOV of 20 s or more on the full-decode path are split (docs/INGEST.md, "Split decode")',
  }),
  searchCacheMb: row({
    key: "search_cache_mb",
    env: "VSEARCH_SEARCH_CACHE_MB",
    schema: int(0),
    envKind: "number",
    requirement: "an integer of MiB, 0 or more",
    default: 256,
    doc: "search vector cache",
    defaultDoc: "256 (exact vectors of recently rescored rows, MiB; 0 reads them from the store every time)",
  }),
  vectorMemoryBudget: row({
    key: "vector_memory_budget",
    env: "VSEARCH_VECTOR_MEMORY_BUDGET",
    schema: z.union([z.number().min(0), z.string()]),
    envKind: "string",
    requirement: 'MiB (a number, 0: no limit) or a share of the memory like "50%"',
    check: memoryBudgetProblem,
    default: "50%",
    doc: "vector index memory budget",
    defaultDoc:
      '"50%" (most memory the in-memory vector index may hold: MiB as a number, or a share of the RAM / container limit; 0: no limit). Accounts past it are searched with exact scans from the database; `/readyz` and `doctor` say which (docs/SEARCH.md, "Memory budget")',
  }),
  databaseUrl: unset({
    key: "database_url",
    env: "VSEARCH_DATABASE_URL",
    schema: z.string(),
    envKind: "string",
    requirement: "a postgres:// or postgresql:// URL",
    check: (v) =>
      /^postgres(ql)?:\/\/./.test(v)
        ? undefined
        : "must be a postgres:// or postgresql:// URL (unset: the embedded store)",
    doc: "the store: PostgreSQL 15+ with pgvector 0.8+ instead of the embedded SQLite file (docs/POSTGRES.md). Prefer the environment for a URL with a password",
    defaultDoc: "none: the embedded store, `<data-dir>/vsearch.db`",
  }),
  mediaRoot: row({
    key: "media_root",
    env: "VSEARCH_MEDIA_ROOT",
    schema: z.string().min(1),
    envKind: "string",
    requirement: "a folder",
    finish: (v, { dataDir }) => resolve(dataDir, v),
    default: ".",
    doc: "where the media live (`videos/`, `uploads/tmp/`, the cluster secret): a folder every node mounts when several serve one database (docs/SCALE-OUT.md)",
    defaultDoc: "the data dir (`<data-dir>/videos`, `<data-dir>/uploads`)",
  }),
  secretFile: unset({
    key: "secret_file",
    env: "VSEARCH_SECRET_FILE",
    schema: z.string().min(1),
    envKind: "string",
    requirement: "a file",
    finish: (v, { dataDir }) => resolve(dataDir, v),
    doc: "the cluster secret: signs presigned URLs and seals webhook secrets, the same file on every node (64+ hex characters, e.g. `openssl rand -hex 32`); must exist",
    defaultDoc: "`<media_root>/secret.key`, made on first start",
  }),
  s3Bucket: unset({
    key: "s3_bucket",
    env: "VSEARCH_S3_BUCKET",
    schema: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/),
    envKind: "string",
    requirement: "an S3 bucket name (3-63 lowercase letters, digits, dots, hyphens)",
    doc: 'keep the media in this S3-compatible bucket instead of on a shared media root: the media root becomes each node\'s local cache (docs/SCALE-OUT.md "Object storage"); needs `s3_endpoint`, `s3_access_key_id` and the secret key',
    defaultDoc: "none: the media are files on the media root",
  }),
  s3Endpoint: unset({
    key: "s3_endpoint",
    env: "VSEARCH_S3_ENDPOINT",
    schema: z.string().regex(/^https?:\/\/[^/?#\s]+\/?$/),
    envKind: "string",
    requirement: "an http:// or https:// origin (no path), e.g. https://s3.eu-west-1.amazonaws.com",
    doc: "the S3 API's address (AWS, MinIO, Garage, Ceph RGW, R2, …)",
  }),
  s3Region: row({
    key: "s3_region",
    env: "VSEARCH_S3_REGION",
    schema: z.string().min(1),
    envKind: "string",
    default: "us-east-1",
    doc: "the bucket's region (signs requests)",
  }),
  s3Prefix: unset({
    key: "s3_prefix",
    env: "VSEARCH_S3_PREFIX",
    schema: z.string().regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*\/?$/),
    envKind: "string",
    requirement: "a key prefix like `vsearch/` (letters, digits, `._-`, `/`-separated)",
    doc: "the objects' key prefix in the bucket (several installs can share one bucket)",
    defaultDoc: "none: `videos/<video_id>/…` at the bucket's top",
  }),
  s3AccessKeyId: unset({
    key: "s3_access_key_id",
    env: "VSEARCH_S3_ACCESS_KEY_ID",
    schema: z.string().min(1),
    envKind: "string",
    doc: "the access key id",
  }),
  s3SecretAccessKey: unset({
    key: "s3_secret_access_key",
    env: "VSEARCH_S3_SECRET_ACCESS_KEY",
    schema: z.string().min(1),
    envKind: "string",
    doc: "the secret access key (never printed). Prefer the environment or `s3_secret_access_key_file` to config.json",
  }),
  s3SecretAccessKeyFile: unset({
    key: "s3_secret_access_key_file",
    env: "VSEARCH_S3_SECRET_ACCESS_KEY_FILE",
    schema: z.string().min(1),
    envKind: "string",
    requirement: "a file",
    finish: (v, { dataDir }) => resolve(dataDir, v),
    doc: "a file holding the secret access key (one line; e.g. a systemd credential or a mounted secret)",
  }),
  mediaCacheMb: unset({
    key: "media_cache_mb",
    env: "VSEARCH_MEDIA_CACHE_MB",
    schema: int(0),
    envKind: "number",
    requirement: "an integer of MiB, 0 or more",
    doc: 'with `s3_bucket` only: the most each node keeps of the media it fetched from or put to the bucket; the least recently used videos\' files are deleted first and fetched again when needed (docs/SCALE-OUT.md "Reads: fetched into the cache"). Without a bucket nothing is ever evicted',
    defaultDoc: "half the size of the disk the media root is on",
  }),
  s3UrlStyle: row({
    key: "s3_url_style",
    env: "VSEARCH_S3_URL_STYLE",
    schema: oneOf(S3_URL_STYLES),
    envKind: "string",
    requirement: words(S3_URL_STYLES),
    default: "path",
    doc: "`path`: `https://host/bucket/key` (MinIO, Garage, Ceph); `virtual-hosted`: `https://bucket.host/key` (AWS)",
    range: choices(S3_URL_STYLES),
  }),
  vectorBackend: row({
    key: "vector_backend",
    env: "VSEARCH_VECTOR_BACKEND",
    schema: oneOf(VECTOR_BACKENDS),
    envKind: "string",
    requirement: words(VECTOR_BACKENDS),
    default: "memory",
    doc: "where search's nearest neighbours come from: the in-memory index each server builds, or pgvector's HNSW indexes (`database_url` only: stateless servers)",
    range: choices(VECTOR_BACKENDS),
  }),
  modelIdleUnloadSecs: row({
    key: "model_idle_unload_secs",
    env: "VSEARCH_MODEL_IDLE_UNLOAD_SECS",
    schema: z.number().min(0),
    envKind: "number",
    requirement: "0 or more",
    default: 300,
    doc: "unload idle models after (s)",
    defaultDoc:
      '300: an inference pool with no task for this long is closed and its models leave memory, and so is an OCR worker that has read no frame for this long; then, with nothing in flight, the server drops its search caches and SQLite\'s page cache and hands freed memory back (an idle server drops back to ~150 MB from ~1 GB; docs/OPERATIONS.md, "Memory when idle"). The next ingest or search starts them again, paying the model load (0.85–1.7 s a model measured on 2 busy cores) and the OCR worker start (~1.5 s there) once. 0 keeps models and OCR workers loaded',
  }),
  clipMaxSecs: row({
    key: "clip_max_secs",
    env: "VSEARCH_CLIP_MAX_SECS",
    schema: z.number().positive(),
    envKind: "number",
    requirement: "a positive number of seconds",
    default: 300,
    doc: "longest clip export (s)",
    defaultDoc: "300: `GET /v1/videos/{id}/clip` answers 422 for a longer span",
  }),
  clipCacheMb: row({
    key: "clip_cache_mb",
    env: "VSEARCH_CLIP_CACHE_MB",
    schema: int(0),
    envKind: "number",
    requirement: "an integer of MiB, 0 or more",
    default: 1024,
    doc: "clip export cache",
    defaultDoc:
      "1024: all cached clips together, MiB; the least recently requested are deleted first (0 keeps only the newest)",
  }),
  maxVideoPixels: row({
    key: "max_video_pixels",
    env: "VSEARCH_MAX_VIDEO_PIXELS",
    schema: int(4096),
    envKind: "number",
    requirement: "an integer ≥ 4096 (64×64)",
    default: 7680 * 4320,
    doc: "largest video frame decoded",
    defaultDoc:
      "33177600 (8K, 7680×4320): pixels of one frame; a bigger one is refused at upload or probe (VIDEO_TOO_LARGE) and by every decoder",
  }),
  agentCallTimeoutSecs: row({
    key: "agent_call_timeout_secs",
    env: "VSEARCH_AGENT_CALL_TIMEOUT_SECS",
    schema: z.number().positive().max(3600),
    envKind: "number",
    requirement: "a number of seconds in (0, 3600]",
    default: 60,
    doc: "agent tool call deadline",
    defaultDoc: "60: longest one MCP tool call (HTTP or stdio) may run before it answers TIMEOUT",
  }),
  jobConcurrency: row({
    key: "job_concurrency",
    env: "VSEARCH_JOB_CONCURRENCY",
    schema: positiveInt,
    envKind: "number",
    requirement: "a positive integer",
    default: 1,
    doc: "concurrent ingest and OCR tasks on this node",
    defaultDoc:
      '1 (the `index` lane\'s slots; web renditions have a lane of one slot that runs while the node indexes nothing: docs/ARCHITECTURE.md "The task queue")',
  }),
  /**
   * Most uploads one account may have waiting to be indexed; past it an upload is answered 429
   * QUEUE_FULL with Retry-After (`vsearch ingest` is not held to it). 0: no cap.
   */
  queueAccountMaxWaiting: row({
    key: "queue_account_max_waiting",
    env: "VSEARCH_QUEUE_ACCOUNT_MAX_WAITING",
    schema: int(0),
    envKind: "number",
    requirement: "a whole number, 0 or more",
    default: 100,
    doc: "uploads one account may have waiting to be indexed",
    range: "(0 or more)",
    defaultDoc:
      "100: the next `POST /v1/upload` is 429 `QUEUE_FULL` with `Retry-After`, refused before its body is read; `vsearch ingest`, `reindex` and job retries are not held to it; 0: no cap",
  }),
  /** A task's lease: renewed every third of it while its node lives; a dead node's tasks are claimed again after it. */
  queueLeaseSecs: row({
    key: "queue_lease_secs",
    env: "VSEARCH_QUEUE_LEASE_SECS",
    schema: int(3, 3600),
    envKind: "number",
    requirement: "a whole number of seconds from 3 to 3600",
    default: 60,
    doc: "task lease",
    range: "(3–3600 s)",
    defaultDoc:
      "60: each node renews its tasks' leases every third of it (database clock); a task whose node died (`kill -9`, a lost machine) is claimed by another node once its lease runs out",
  }),
  /** Most tasks (ingest, OCR, rendition) one account may have running at once, across every node. 0: no cap. */
  queueAccountMaxRunning: row({
    key: "queue_account_max_running",
    env: "VSEARCH_QUEUE_ACCOUNT_MAX_RUNNING",
    schema: int(0),
    envKind: "number",
    requirement: "a whole number, 0 or more",
    default: 0,
    doc: "tasks one account may run at once, across every node",
    range: "(0 or more)",
    defaultDoc:
      "0: no cap (the claim already serves the account with the fewest tasks running first; a cap leaves slots idle while only that account has work)",
  }),
  ocrThreads: row({
    key: "ocr_threads",
    env: "VSEARCH_OCR_THREADS",
    schema: int(0, 8),
    envKind: "number",
    requirement: "an integer from 0 to 8",
    default: 1,
    doc: "OCR threads (on-screen text)",
    range: "(0–8)",
    defaultDoc: "1 (each reads one frame at a time on one core; 0 turns the `ocr` stage off)",
  }),
  ocrEngine: row({
    key: "ocr_engine",
    env: "VSEARCH_OCR_ENGINE",
    schema: oneOf(OCR_ENGINES),
    envKind: "string",
    requirement: words(OCR_ENGINES),
    default: "ppocr",
    doc: "OCR engine",
    range: `= ${choices(OCR_ENGINES)}`,
    defaultDoc:
      '`ppocr`: PaddleOCR\'s v4 detector and recognizer on the bundled ONNX Runtime (Latin and Chinese); `tesseract`: tesseract.js with its English data. Both bundled; why the default: BENCHMARKS.md "On-screen text"',
  }),
  ocrMaxFramesPerMinute: row({
    key: "ocr_max_frames_per_minute",
    env: "VSEARCH_OCR_MAX_FRAMES_PER_MINUTE",
    schema: int(1, 600),
    envKind: "number",
    requirement: "an integer in 1..600",
    default: 30,
    doc: "OCR frames per minute of video",
    range: "(1–600)",
    defaultDoc:
      "30: at most this many frames of each minute of video go to the OCR engine; the stage says how many it left unread",
  }),
  ocrBudgetSecsPerMinute: row({
    key: "ocr_budget_secs_per_minute",
    env: "VSEARCH_OCR_BUDGET_SECS_PER_MINUTE",
    schema: z.number().min(1),
    envKind: "number",
    requirement: "a number ≥ 1",
    default: 30,
    doc: "OCR time budget",
    range: "(≥ 1)",
    defaultDoc:
      '30: seconds of OCR per minute of video (at least this many per video); once spent the stage ends `partial`, saying how far it read (docs/INGEST.md, "On-screen text")',
  }),
  ffmpegPath: unset({
    key: "ffmpeg_path",
    env: "VSEARCH_FFMPEG_PATH",
    schema: z.string(),
    envKind: "string",
    doc: "ffmpeg override",
    defaultDoc: "the embedded static build",
  }),
  ffprobePath: unset({
    key: "ffprobe_path",
    env: "VSEARCH_FFPROBE_PATH",
    schema: z.string(),
    envKind: "string",
    doc: "ffprobe override",
    defaultDoc: "the embedded static build",
  }),
  sessionTtlSecs: row({
    key: "session_ttl_secs",
    env: "VSEARCH_SESSION_TTL_SECS",
    schema: positiveInt,
    envKind: "number",
    requirement: "a positive integer of seconds",
    default: 12 * 3600,
    doc: "session lifetime",
    defaultDoc: "43200 (12 h)",
  }),
  presignTtlSecs: row({
    key: "presign_ttl_secs",
    env: "VSEARCH_PRESIGN_TTL_SECS",
    schema: positiveInt,
    envKind: "number",
    requirement: "a positive integer of seconds",
    default: 3600,
    doc: "presigned URL lifetime",
  }),
  publicBaseUrl: unset({
    key: "public_base_url",
    env: "VSEARCH_PUBLIC_BASE_URL",
    schema: z.string(),
    envKind: "string",
    doc: "base of links read elsewhere: the agent routes (`/v1/agent/*`, `/v1/mcp`) and links made outside a request (CLI, `vsearch mcp`); other links follow the address each request came to",
    defaultDoc: "none: agent links follow the request too; without a request, the address `serve` runs on",
  }),
  webhookRetryDelaysSecs: row({
    key: "webhook_retry_delays",
    env: "VSEARCH_WEBHOOK_RETRY_DELAYS",
    schema: z.array(z.number().nonnegative()),
    envKind: "number-list",
    requirement: "a list of seconds, each 0 or more",
    default: [30, 60],
    doc: "webhook retry delays (s)",
    range: "(e.g. `30,60`)",
    defaultDoc: "`30,60`",
  }),
  webhookTimeoutMs: row({
    key: "webhook_timeout_ms",
    env: "VSEARCH_WEBHOOK_TIMEOUT_MS",
    schema: positiveInt,
    envKind: "number",
    requirement: "a positive integer of milliseconds",
    default: 10_000,
    doc: "webhook attempt timeout",
  }),
  allowNetworks: row({
    key: "allow_networks",
    env: "VSEARCH_WEBHOOK_ALLOW_NETWORKS",
    schema: z.array(z.string()),
    envKind: "list",
    default: [],
    doc: "networks webhooks and `image_url` may reach",
    range: "(CIDRs, comma-separated)",
    defaultDoc: "none",
  }),
  trustedProxies: row({
    key: "trusted_proxies",
    env: "VSEARCH_TRUSTED_PROXIES",
    schema: z.array(z.string()),
    envKind: "list",
    check: (v) => {
      for (const p of v) {
        try {
          parseCidr(p);
        } catch (e) {
          return (e as Error).message;
        }
      }
    },
    default: [],
    doc: "reverse proxies whose `X-Forwarded-For` (the client address), `X-Forwarded-Proto` and `X-Forwarded-Host` (the origin links are built on) are believed",
    range: "(CIDRs or addresses, comma-separated)",
    defaultDoc:
      "none: the client address is the socket peer, links follow the `Host` header, and `X-Forwarded-*` is ignored",
  }),
  corsOrigins: row({
    key: "cors_origins",
    env: "VSEARCH_CORS_ORIGINS",
    schema: z.array(z.string()),
    envKind: "list",
    check: (v) => {
      const bad = v.find((o) => !/^https?:\/\/[^/\s]+$/.test(o));
      return bad === undefined ? undefined : `"${bad}" is not an origin like https://app.example.com`;
    },
    default: [],
    doc: "browser origins allowed by CORS",
    range: "(e.g. `https://app.example.com`, comma-separated)",
    defaultDoc: "none: CORS off, no `Access-Control-*` headers",
  }),
  rateLimitMaxClients: row({
    key: "rate_limit_max_clients",
    env: "VSEARCH_RATE_LIMIT_MAX_CLIENTS",
    schema: int(1000),
    envKind: "number",
    requirement: "an integer ≥ 1000",
    default: 500_000,
    doc: "rate-limit counters kept in memory, at most",
    range: "(≥ 1000)",
    defaultDoc: "500000 (~150 B each; least recently used dropped first)",
  }),
  creditsPerMinute: row({
    key: "credits_per_minute",
    env: "VSEARCH_CREDITS_PER_MINUTE",
    schema: z.number().nonnegative(),
    envKind: "number",
    requirement: "0 or more",
    default: 1,
    doc: "credits per minute indexed",
  }),
  creditsPerSearch: row({
    key: "credits_per_search",
    env: "VSEARCH_CREDITS_PER_SEARCH",
    schema: z.number().nonnegative(),
    envKind: "number",
    requirement: "0 or more",
    default: 0.1,
    doc: "credits per search",
  }),
  creditsLowThreshold: row({
    key: "credits_low_threshold",
    env: "VSEARCH_CREDITS_LOW_THRESHOLD",
    schema: z.number().nonnegative(),
    envKind: "number",
    requirement: "0 or more",
    default: 100,
    doc: "low-credit threshold",
  }),
};

export type SettingName = keyof typeof SETTINGS;

/** Each setting's value type: the row's schema, possibly undefined for a row without a default. */
export type SettingValues = {
  [K in SettingName]: (typeof SETTINGS)[K] extends { default: undefined }
    ? z.output<(typeof SETTINGS)[K]["schema"]> | undefined
    : z.output<(typeof SETTINGS)[K]["schema"]>;
};

// Rate limits: one setting per route group, in config.json as `rate_limits: {"<group>": n}` and in
// the environment as VSEARCH_RATE_LIMIT_<GROUP>.
export const RATE_GROUPS = [
  "search",
  "upload",
  "jobs",
  "moment",
  "videos",
  "collections_read",
  "collections_write",
  "api_keys",
  "admin",
  "setup",
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
  // The admin pages' routes (issue 22): people (each write hashes a password with argon2id, so
  // few per minute), one's own password, and the system status.
  admin: 30,
  // The first-run status the dashboard reads on its sign-in page (per client address).
  setup: 60,
  agent: 30,
  webhooks: 30,
  // Sign-in (SPEC §8, issue 9): `auth` counts failed sign-ins per (client address, e-mail);
  // `auth_email` failed sign-ins per e-mail from all addresses (distributed guessing);
  // `auth_address` every sign-in attempt per address (spraying many e-mails, argon2 cost).
  auth: 10,
  auth_email: 50,
  auth_address: 60,
};

export const RATE_LIMITS_KEY = "rate_limits";
export const rateLimitEnv = (g: RateGroup) => `VSEARCH_RATE_LIMIT_${g.toUpperCase()}`;
export const rateLimitSchema = positiveInt;
