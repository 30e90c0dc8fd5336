import type { Config } from "../config/config.ts";
import type { Logger } from "../core/logger.ts";
import { chooseDevice, createPoolProbe, type DeviceChoice } from "./device.ts";
import { availableParallelism } from "node:os";
import { createInferencePool, planThreads, type InferencePool } from "./pool.ts";
import { existsSync, readFileSync } from "node:fs";
import { pruneDerivedModels } from "./derived-model.ts";
import { signedWeightsDecision, type SignedWeightsDecision } from "./signed-weights.ts";
import { dirname, join } from "node:path";
import { resolveNativeFiles } from "../runtime/native-files.ts";
import type { ModelCatalog } from "../models/roles.ts";

type PoolRole = "vision" | "speech";

/** One pool's life: started on first use, closed after `modelIdleUnloadSecs` without a task. */
interface PoolSlot {
  pool: Promise<InferencePool> | null;
  /** Tasks between "asked for the pool" and "got the answer": a slot with any is never closed. */
  inflight: number;
  lastUsedAt: number;
}

/**
 * The CUDA provider is a separate library next to libonnxruntime; the npm build ships without
 * it (its download is skipped). Without the file a probe can only fail — noisily, from native
 * code — so `auto` does not try.
 */
function cudaProviderPresent(runtimeDir: string | null | undefined): boolean {
  try {
    const ortDir = runtimeDir ? join(runtimeDir, "onnxruntime") : dirname(resolveNativeFiles().ortLibrary);
    return existsSync(join(ortDir, "libonnxruntime_providers_cuda.so"));
  } catch {
    return false;
  }
}

function readCpuinfo(): string | null {
  try {
    return readFileSync("/proc/cpuinfo", "utf8");
  } catch {
    return null;
  }
}

/**
 * Owns the inference workers: one pool for the image-text model (frames, scene labels, search
 * queries) and one for speech, each started on first use (a server without models never starts
 * ONNX threads), on the device VSEARCH_DEVICE resolves to, probed with the installed CLIP model.
 *
 * Why two: a batch of Whisper windows runs for seconds; in a shared worker every search query's
 * text embedding and every frame batch would queue behind it. Apart, a video's transcript is
 * decoded while its frames are embedded (the two use the cores unevenly — Whisper's small decoder
 * steps leave a lot idle), and search stays responsive during transcription.
 *
 * Why pools close when idle: the workers hold the models (~1 GB resident with CLIP and Whisper),
 * and an appliance spends most of its life waiting. After `modelIdleUnloadSecs` without a task a
 * pool is closed and freed native memory is handed back; the next task starts it again and pays
 * the model load once (see BENCHMARKS.md, "Idle memory").
 */
export class InferenceHost {
  private readonly slots: Record<PoolRole, PoolSlot> = {
    vision: { pool: null, inflight: 0, lastUsedAt: 0 },
    speech: { pool: null, inflight: 0, lastUsedAt: 0 },
  };
  private idleTimer: ReturnType<typeof setInterval> | null = null;
  private choice: DeviceChoice | null = null;
  private signed: SignedWeightsDecision | null = null;
  private pruned: Promise<number> | null = null;

  constructor(
    private readonly config: Config,
    private readonly workerFile: string,
    private readonly models: ModelCatalog,
    private readonly logger: Logger,
    private readonly runtimeDir: string | null = null,
    /** Called after idle pools were closed (not after `close()`). */
    private readonly onUnloaded: (() => void) | null = null,
    /** The CPU's facts (/proc/cpuinfo text) the signed-weights decision reads; tests pass a CPU of their choice. */
    private readonly cpuinfo: () => string | null = readCpuinfo,
  ) {}

  async device(): Promise<DeviceChoice> {
    if (!this.choice) {
      const probeModel = this.models.active("image-text") ?? this.models.active("speech");
      const poolProbe = probeModel
        ? createPoolProbe({ workerFile: this.workerFile, modelDir: probeModel.dir, logger: this.logger })
        : null;
      this.choice = await chooseDevice(this.config.device, async (device) => {
        if (device === "cuda" && !cudaProviderPresent(this.runtimeDir)) {
          return {
            ok: false,
            detail:
              "this ONNX Runtime build has no CUDA execution provider (libonnxruntime_providers_cuda.so not found)",
          };
        }
        return poolProbe ? poolProbe(device) : { ok: false, detail: "no model installed to probe a GPU provider with" };
      });
      this.logger.info("inference device", { device: this.choice.device, reason: this.choice.reason });
    }
    return this.choice;
  }

  /** Whether int8 models load with signed weights here, and why. */
  signedWeights(): SignedWeightsDecision {
    this.signed ??= signedWeightsDecision(this.config.signedInt8Weights, this.cpuinfo());
    return this.signed;
  }

  /** The inference API; tasks go to the pool of their model's role. No thread starts before a task. */
  async get(): Promise<InferencePool> {
    const choice = await this.device();
    const plan = planThreads(availableParallelism(), this.config.workerThreads);
    return new RoutedPool((role, fn) => this.use(role, fn), { ...plan, device: choice.device });
  }

  /** Runs `fn` on the pool of `role`, starting it if needed; the pool cannot close meanwhile. */
  private async use<T>(role: PoolRole, fn: (pool: InferencePool) => Promise<T>): Promise<T> {
    const slot = this.slots[role];
    slot.inflight++;
    try {
      slot.pool ??= this.start(role, role === "vision" ? this.config.workerThreads : 1);
      return await fn(await slot.pool);
    } finally {
      slot.inflight--;
      slot.lastUsedAt = Date.now();
      this.armIdleTimer();
    }
  }

  private armIdleTimer(): void {
    const idleMs = this.config.modelIdleUnloadSecs * 1000;
    if (this.idleTimer || idleMs <= 0) return;
    // A quarter of the idle time (at most 30 s) between checks: a pool closes within 1.25× the setting.
    this.idleTimer = setInterval(() => void this.unloadIdle(), Math.max(50, Math.min(30_000, idleMs / 4)));
    this.idleTimer.unref?.();
  }

  /**
   * Closes every pool that has had no task for `modelIdleUnloadSecs` and none in flight, then
   * calls `onUnloaded`. Returns how many pools were closed.
   */
  async unloadIdle(): Promise<number> {
    const idleMs = this.config.modelIdleUnloadSecs * 1000;
    if (idleMs <= 0) return 0;
    const closing: { role: PoolRole; pool: Promise<InferencePool> }[] = [];
    for (const role of ["vision", "speech"] as const) {
      const slot = this.slots[role];
      if (!slot.pool || slot.inflight > 0 || Date.now() - slot.lastUsedAt < idleMs) continue;
      // Forgotten before it closes: a task arriving now starts a fresh pool instead of a closing one.
      closing.push({ role, pool: slot.pool });
      slot.pool = null;
    }
    if (!this.slots.vision.pool && !this.slots.speech.pool && this.idleTimer) {
      clearInterval(this.idleTimer);
      this.idleTimer = null;
    }
    if (closing.length === 0) return 0;
    const rssBefore = process.memoryUsage().rss;
    await Promise.all(
      closing.map(({ pool }) =>
        pool.then(
          (p) => p.close(),
          () => undefined,
        ),
      ),
    );
    this.logger.info("models unloaded after idle", {
      pools: closing.map((c) => c.role),
      idle_secs: this.config.modelIdleUnloadSecs,
      rss_mb_before: Math.round(rssBefore / 1e6),
    });
    this.onUnloaded?.();
    return closing.length;
  }

  private start(role: PoolRole, threads: number): Promise<InferencePool> {
    const signedDir = this.signedWeights().enabled ? `${this.config.dataDir}/runtime/signed-models` : undefined;
    // Once per process: derived copies of models that are no longer installed go.
    this.pruned ??= signedDir ? pruneDerivedModels(signedDir).catch(() => 0) : Promise.resolve(0);
    const pool = Promise.all([this.device(), this.pruned]).then(([choice]) =>
      createInferencePool({
        workerFile: this.workerFile,
        threads,
        device: choice.device,
        logger: this.logger.child({ pool: role }),
        cacheDir: `${this.config.dataDir}/runtime/transformers-cache`,
        signedWeightsDir: signedDir,
      }),
    );
    pool.catch(() => {
      if (this.slots[role].pool === pool) this.slots[role].pool = null;
    });
    return pool;
  }

  /** Whether a task is in flight (asked for a pool and not answered yet). */
  get busy(): boolean {
    return this.slots.vision.inflight > 0 || this.slots.speech.inflight > 0;
  }

  /** Whether an inference pool is running now (started and not closed since, idle or not). */
  get started(): boolean {
    return this.slots.vision.pool !== null || this.slots.speech.pool !== null;
  }

  async close(): Promise<void> {
    if (this.idleTimer) clearInterval(this.idleTimer);
    this.idleTimer = null;
    const pools = [this.slots.vision.pool, this.slots.speech.pool];
    this.slots.vision.pool = this.slots.speech.pool = null;
    await Promise.all(pools.map(async (p) => (p ? (await p.catch(() => null))?.close() : undefined)));
  }
}

/** One InferencePool over two: CLIP tasks (and self tests) to one, Whisper tasks to the other. */
class RoutedPool implements InferencePool {
  constructor(
    private readonly use: <T>(role: PoolRole, fn: (pool: InferencePool) => Promise<T>) => Promise<T>,
    private readonly info: { threads: number; intraOpThreads: number; device: InferencePool["device"] },
  ) {}

  get threads() {
    return this.info.threads;
  }
  get intraOpThreads() {
    return this.info.intraOpThreads;
  }
  get device() {
    return this.info.device;
  }

  embedImages(...a: Parameters<InferencePool["embedImages"]>) {
    return this.use("vision", (p) => p.embedImages(...a));
  }
  embedTexts(...a: Parameters<InferencePool["embedTexts"]>) {
    return this.use("vision", (p) => p.embedTexts(...a));
  }
  transcribe(...a: Parameters<InferencePool["transcribe"]>) {
    return this.use("speech", (p) => p.transcribe(...a));
  }
  transcribeWindows(...a: Parameters<InferencePool["transcribeWindows"]>) {
    return this.use("speech", (p) => p.transcribeWindows(...a));
  }
  selfTest(...a: Parameters<InferencePool["selfTest"]>) {
    return this.use("vision", (p) => p.selfTest(...a));
  }
  /** The host owns the pools: they close with it. */
  async close(): Promise<void> {}
}
