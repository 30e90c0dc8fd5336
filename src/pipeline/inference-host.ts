import type { Config } from "../config/config.ts";
import type { Logger } from "../core/logger.ts";
import { chooseDevice, createPoolProbe, type DeviceChoice } from "../inference/device.ts";
import { createInferencePool, type InferencePool } from "../inference/pool.ts";
import { existsSync, readFileSync } from "node:fs";
import { signedWeightsDecision, type SignedWeightsDecision } from "../inference/signed-weights.ts";
import { dirname, join } from "node:path";
import { resolveNativeFiles } from "../runtime/native-files.ts";
import type { ModelCatalog } from "./deps.ts";

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
 * Owns the worker pool: created on first use (a server without models never starts ONNX
 * threads), on the device VSEARCH_DEVICE resolves to, probed with the installed CLIP model.
 */
export class InferenceHost {
  private pool: Promise<InferencePool> | null = null;
  private choice: DeviceChoice | null = null;
  private signed: SignedWeightsDecision | null = null;

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

  get(): Promise<InferencePool> {
    this.pool ??= this.device().then((choice) =>
      createInferencePool({
        workerFile: this.workerFile,
        threads: this.config.workerThreads,
        device: choice.device,
        logger: this.logger,
        cacheDir: `${this.config.dataDir}/runtime/transformers-cache`,
        signedWeightsDir: this.signedWeights().enabled ? `${this.config.dataDir}/runtime/signed-models` : undefined,
      }),
    );
    this.pool.catch(() => (this.pool = null));
    return this.pool;
  }

  get started(): boolean {
    return this.pool !== null;
  }

  async close(): Promise<void> {
    const p = this.pool;
    this.pool = null;
    if (p) await (await p.catch(() => null))?.close();
  }
}
