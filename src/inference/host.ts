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
 */
export class InferenceHost {
  private vision: Promise<InferencePool> | null = null;
  private speech: Promise<InferencePool> | null = null;
  private choice: DeviceChoice | null = null;
  private signed: SignedWeightsDecision | null = null;
  private pruned: Promise<number> | null = null;

  constructor(
    private readonly config: Config,
    private readonly workerFile: string,
    private readonly models: ModelCatalog,
    private readonly logger: Logger,
    private readonly runtimeDir: string | null = null,
  ) {}

  async device(): Promise<DeviceChoice> {
    if (!this.choice) {
      const probeModel = this.models.active("image-text") ?? this.models.active("speech");
      const poolProbe = probeModel ? createPoolProbe({ workerFile: this.workerFile, modelDir: probeModel.dir, logger: this.logger }) : null;
      this.choice = await chooseDevice(this.config.device, async (device) => {
        if (device === "cuda" && !cudaProviderPresent(this.runtimeDir)) {
          return { ok: false, detail: "this ONNX Runtime build has no CUDA execution provider (libonnxruntime_providers_cuda.so not found)" };
        }
        return poolProbe ? poolProbe(device) : { ok: false, detail: "no model installed to probe a GPU provider with" };
      });
      this.logger.info("inference device", { device: this.choice.device, reason: this.choice.reason });
    }
    return this.choice;
  }

  /** Whether int8 models load with signed weights here, and why. */
  signedWeights(): SignedWeightsDecision {
    this.signed ??= signedWeightsDecision(this.config.signedInt8Weights, readCpuinfo());
    return this.signed;
  }

  /** The inference API; tasks go to the pool of their model's role. No thread starts before a task. */
  async get(): Promise<InferencePool> {
    const choice = await this.device();
    const plan = planThreads(availableParallelism(), this.config.workerThreads);
    return new RoutedPool(() => (this.vision ??= this.start("vision", this.config.workerThreads)), () => (this.speech ??= this.start("speech", 1)), {
      ...plan,
      device: choice.device,
    });
  }

  private start(role: "vision" | "speech", threads: number): Promise<InferencePool> {
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
      if (role === "vision" && this.vision === pool) this.vision = null;
      if (role === "speech" && this.speech === pool) this.speech = null;
    });
    return pool;
  }

  /** Whether any inference worker was started. */
  get started(): boolean {
    return this.vision !== null || this.speech !== null;
  }

  async close(): Promise<void> {
    const pools = [this.vision, this.speech];
    this.vision = this.speech = null;
    await Promise.all(pools.map(async (p) => (p ? (await p.catch(() => null))?.close() : undefined)));
  }
}

/** One InferencePool over two: CLIP tasks (and self tests) to one, Whisper tasks to the other. */
class RoutedPool implements InferencePool {
  constructor(
    private readonly vision: () => Promise<InferencePool>,
    private readonly speech: () => Promise<InferencePool>,
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

  async embedImages(...a: Parameters<InferencePool["embedImages"]>) {
    return (await this.vision()).embedImages(...a);
  }
  async embedTexts(...a: Parameters<InferencePool["embedTexts"]>) {
    return (await this.vision()).embedTexts(...a);
  }
  async transcribe(...a: Parameters<InferencePool["transcribe"]>) {
    return (await this.speech()).transcribe(...a);
  }
  async transcribeWindows(...a: Parameters<InferencePool["transcribeWindows"]>) {
    return (await this.speech()).transcribeWindows(...a);
  }
  async selfTest(...a: Parameters<InferencePool["selfTest"]>) {
    return (await this.vision()).selfTest(...a);
  }
  /** The host owns the pools: they close with it. */
  async close(): Promise<void> {}
}
