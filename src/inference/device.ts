/**
 * `VSEARCH_DEVICE=auto|cpu|cuda|webgpu` → the execution provider the pool will use, and why
 * (`vsearch doctor` prints the reason).
 *
 * - `cpu`: always CPU, nothing probed.
 * - `cuda` / `webgpu`: that provider must really load and run (probe); if it does not, this is an
 *   error (`DEVICE_UNAVAILABLE`), never a silent CPU fallback.
 * - `auto`: CUDA if it really loads, else CPU. WebGPU is never picked automatically: in
 *   onnxruntime-node it is experimental and has no kernels for the int8 (q8) models this app
 *   ships by default, so they would mostly run on CPU with extra copies. Ask for it explicitly.
 *
 * onnxruntime-node as installed here has no CUDA provider libraries (their download is denied at
 * install time), so on these machines `auto` resolves to CPU and `cuda` is an error.
 */
import type { Logger } from "../core/logger.ts";
import type { ExecDevice, WeightDtype } from "./dtype.ts";
import { InferenceError, describeError } from "./errors.ts";
import { createInferencePool } from "./pool.ts";

export type DeviceRequest = "auto" | ExecDevice;
export type GpuDevice = Exclude<ExecDevice, "cpu">;

export interface ProbeResult {
  ok: boolean;
  /** What happened, one line (the provider's own error message when it failed). */
  detail: string;
}

/** Tries a GPU provider for real. Throwing counts as a failed probe. */
export type DeviceProbe = (device: GpuDevice) => ProbeResult | Promise<ProbeResult>;

export interface DeviceChoice {
  requested: DeviceRequest;
  device: ExecDevice;
  reason: string;
  /** Every probe that ran, by provider. */
  probes: Partial<Record<GpuDevice, ProbeResult>>;
}

/** Providers `auto` tries, in order. */
export const AUTO_CANDIDATES: readonly GpuDevice[] = ["cuda"];

const REQUESTS: readonly DeviceRequest[] = ["auto", "cpu", "cuda", "webgpu"];

async function runProbe(probe: DeviceProbe, device: GpuDevice): Promise<ProbeResult> {
  try {
    const r = await probe(device);
    return { ok: r.ok === true, detail: String(r.detail ?? "") };
  } catch (e) {
    return { ok: false, detail: describeError(e) };
  }
}

/**
 * Decides the device. Pure apart from the injected probe, which is called only for the providers
 * the decision needs (none for `cpu`).
 */
export async function chooseDevice(requested: string, probe: DeviceProbe): Promise<DeviceChoice> {
  const req = String(requested ?? "")
    .trim()
    .toLowerCase() as DeviceRequest;
  if (!REQUESTS.includes(req)) {
    throw new InferenceError(
      "INVALID_INPUT",
      `VSEARCH_DEVICE must be one of ${REQUESTS.join(", ")}, got "${requested}"`,
    );
  }
  const probes: DeviceChoice["probes"] = {};
  if (req === "cpu") {
    return { requested: req, device: "cpu", reason: "cpu requested", probes };
  }
  if (req === "cuda" || req === "webgpu") {
    const r = (probes[req] = await runProbe(probe, req));
    if (!r.ok) {
      throw new InferenceError(
        "DEVICE_UNAVAILABLE",
        `VSEARCH_DEVICE=${req}, but the ${req} execution provider does not load here: ${r.detail || "probe failed"}. ` +
          `Use VSEARCH_DEVICE=auto or cpu to run on the CPU.`,
      );
    }
    return {
      requested: req,
      device: req,
      reason: `${req} requested and its execution provider loads (${r.detail})`,
      probes,
    };
  }
  for (const d of AUTO_CANDIDATES) {
    const r = (probes[d] = await runProbe(probe, d));
    if (r.ok) return { requested: req, device: d, reason: `auto: ${d} execution provider loads (${r.detail})`, probes };
  }
  const why = AUTO_CANDIDATES.map((d) => `${d}: ${probes[d]!.detail || "failed"}`).join("; ");
  return { requested: req, device: "cpu", reason: `auto: no GPU execution provider loads, using CPU (${why})`, probes };
}

/**
 * The real probe, run where inference runs: a throwaway one-worker pool on the provider loads an
 * installed model's smallest tower and runs it once (a provider that "appends" but cannot run a
 * real graph does not count). The main thread never loads ONNX Runtime. About a second per probe.
 */
export function createPoolProbe(opts: {
  workerFile: string | URL;
  /** Any installed CLIP or Whisper folder (a CLIP text tower is the cheapest). */
  modelDir: string;
  dtype?: WeightDtype;
  logger?: Logger;
}): (device: ExecDevice) => Promise<ProbeResult> {
  return async (device) => {
    const pool = createInferencePool({
      workerFile: opts.workerFile,
      threads: 1,
      intraOpThreads: 1,
      device,
      logger: opts.logger,
    });
    try {
      const r = await pool.selfTest(opts.modelDir, { dtype: opts.dtype });
      return { ok: true, detail: `${r.ran} of ${r.modelId} ran in ${r.runMs.toFixed(1)} ms` };
    } finally {
      await pool.close();
    }
  };
}
